"""The total that counts for each row of a class run, in the words every output shows it.

With a late policy the total that counts is `adjusted_total` (the total less the penalty for
the days late), the one `gradebook.csv` sends; without one it is the total. A student with no
submission ("missing") counts 0 in the gradebook and is left out of the class statistics,
which describe the work handed in. The terminal table, report.html and each feedback file
read these, so none of them shows a raw total where the adjusted one counts.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.results import SubmissionResult
from ..model.status import QuestionStatus
from ..feedback.totals import Totals


@dataclass(frozen=True)
class Standing:
    total: float               # the raw total of the graded commit
    max_score: float
    counted: float             # the total that counts (adjusted_total with a late policy)
    days_late: int = 0
    deduction: float = 0.0     # the fraction of the total lost to lateness
    missing: bool = False      # no submission: 0 in the gradebook, out of the statistics
    totals: Totals | None = None   # its parts: autograded, written, waiting for a grader

    @property
    def penalised(self) -> bool:
        return self.deduction > 0

    def total_text(self) -> str:
        """`31.5 / 35 (35 less 10 % for 1 day late)`, or `35 / 35` without a penalty; with
        written questions, their part too, in `render.Totals`' words: `42 / 52 (autograded
        42 / 42, written 0 / 10 with 10 points waiting for a grader)`."""
        late = (f"{self.total:g} less {self.deduction * 100:g} % for "
                f"{days_text(self.days_late)} late") if self.penalised else ""
        totals = self.totals or Totals(self.total, self.max_score)
        return totals.text(score=self.counted, before=late)


def days_text(days: int) -> str:
    return f"{days} day" if days == 1 else f"{days} days"


def plain_standing(result: SubmissionResult) -> Standing:
    """A row's standing where no late policy applies: its total counts."""
    return Standing(result.score, result.max_score, result.score, missing=result.missing,
                    totals=Totals.of(result))


def statistics_rule(late_policy: str | None, missing: int) -> str:
    """What the class statistics are computed on, for the report to say."""
    total = (f"the adjusted total (the total less {late_policy}; the raw total stays beside "
             "it), the one gradebook.csv sends" if late_policy else "the total")
    rule = f"Class statistics (mean, median, full marks, the plot of totals) use {total}."
    if late_policy:
        rule += " Question means and plots use the question scores, before any late penalty."
    if missing:
        word = QuestionStatus.MISSING
        who = f"1 {word} student (no submission) is" if missing == 1 else \
            f"{missing} {word} students (no submission) are"
        rule += f" The {who} not counted in any statistic; gradebook.csv gives 0."
    return rule
