"""The totals of a submission and of an assignment, in the one set of words every output uses.

A grade is out of the assignment's autograded points (its question files' cases) plus its
written points (written.toml, graded by hand). Until a grader decides, a written answer
counts 0 and waits; an output that shows a total says so, in the words made here:

* `Totals.text()`: `42 / 52 (autograded 42 / 42, written 0 / 10 with 10 points waiting for a
  grader)`, or `42 / 42` for an assignment without written questions;
* `Totals.written_cell()`: the written part in a table's cell (`wait 0/10`);
* `out_of()`: the maximum, `52 in all (42 autograded, 10 written and graded by hand)`;
* `graded_later()`: what a run on the student's side leaves for later (Classroom 50, the
  Actions step, a student's `check`); `platforms.public_only.assignment_points` the maxima,
  derived from the assignment (never written by hand).

The terminal (the class table, `grade --feedback`, `check`), the feedback files, report.html,
Classroom 50's Release and log, the Actions summary and log, Gradescope's output and the pages
of docs/ (checked by tests/test_docs_totals.py) say a total this way.
"""
from __future__ import annotations

from dataclasses import dataclass


def points(x: float) -> str:
    """A number of points as every output writes it: `7`, `7.5`."""
    return f"{round(x, 6):g}"


def _plural(x: float, word: str = "point") -> str:
    return f"{points(x)} {word}" + ("" if x == 1 else "s")


@dataclass(frozen=True)
class Totals:
    autograded: float
    autograded_max: float
    written: float = 0.0            # points graders gave so far
    written_max: float = 0.0
    waiting: float = 0.0            # the points of the written answers waiting for a grader

    @property
    def score(self) -> float:
        return round(self.autograded + self.written, 6)

    @property
    def max_score(self) -> float:
        return round(self.autograded_max + self.written_max, 6)

    @classmethod
    def of(cls, result) -> "Totals":
        """A graded submission's totals (`results.SubmissionResult`)."""
        written = list(result.written.values())
        return cls(round(sum(q.score for q in result.questions.values()), 6),
                   round(sum(q.max_score for q in result.questions.values()), 6),
                   round(sum(a.points for a in written), 6),
                   round(sum(a.max_score for a in written), 6),
                   round(sum(a.max_score for a in written if a.waiting), 6))

    @classmethod
    def of_json(cls, row: dict) -> "Totals":
        """The same, from a row of grades.json (`autograder grade --json`)."""
        auto = [q for q in row.get("questions", {}).values() if q.get("kind") != "written"]
        written = [q for q in row.get("questions", {}).values() if q.get("kind") == "written"]
        waiting = ("pending", "regrade")
        return cls(round(sum(float(q.get("score") or 0) for q in auto), 6),
                   round(sum(float(q.get("max_score") or 0) for q in auto), 6),
                   round(sum(float(q.get("score") or 0) for q in written), 6),
                   round(sum(float(q.get("max_score") or 0) for q in written), 6),
                   round(sum(float(q.get("max_score") or 0) for q in written
                             if q.get("status") in waiting), 6))

    def parts(self, sep: str = " / ") -> str:
        """`autograded 42 / 42, written 0 / 10 with 10 points waiting for a grader`."""
        text = (f"autograded {points(self.autograded)}{sep}{points(self.autograded_max)}, "
                f"written {points(self.written)}{sep}{points(self.written_max)}")
        if self.waiting:
            text += f" with {_plural(self.waiting)} waiting for a grader"
        return text

    def text(self, sep: str = " / ", score: float | None = None, before: str = "") -> str:
        """The total and, with written questions, its parts: `42 / 52 (autograded 42 / 42,
        written 0 / 10 with 10 points waiting for a grader)`. `score`: the total that counts
        when it is not the sum (a late penalty), `before`: what precedes the parts in the
        brackets (`42 less 10 % for 1 day late`)."""
        shown = self.score if score is None else score
        total = f"{points(shown)}{sep}{points(self.max_score)}"
        inside = [x for x in (before, self.parts(sep) if self.written_max else "") if x]
        return f"{total} ({'; '.join(inside)})" if inside else total

    def written_cell(self) -> str:
        """The written part in a table's cell: `wait 0/10` while answers wait, else `6/10`;
        "" without written questions."""
        if not self.written_max:
            return ""
        cell = f"{points(self.written)}/{points(self.written_max)}"
        return f"wait {cell}" if self.waiting else cell


def out_of(autograded_max: float, written_max: float) -> str:
    """The maximum of a grade: `52 in all (42 autograded, 10 written and graded by hand)`."""
    total = points(round(autograded_max + written_max, 6))
    if not written_max:
        return f"{total} in all"
    return (f"{total} in all ({points(autograded_max)} autograded, {points(written_max)} "
            "written and graded by hand)")


def graded_later(hidden_cases: int, hidden_points: float, autograded_max: float,
                 written_max: float) -> str:
    """What the points of a run on the student's side (Classroom 50, the Actions step, `check`)
    leave for later, with its points. From a public bundle (`hidden_cases`): `These are the
    public cases only. 22 hidden cases, worth 22 more points, and the written questions, worth
    10 (graded by hand), are graded later: the grade is out of 52 in all (42 autograded, 10
    written and graded by hand), so the points here are feedback, not your grade.`"""
    later = []
    if hidden_cases:
        later.append(f"{hidden_cases} hidden case{'s' if hidden_cases != 1 else ''}, worth "
                     f"{points(hidden_points)} more point{'' if hidden_points == 1 else 's'},")
    if written_max:
        later.append(f"the written questions, worth {points(written_max)} (graded by hand),")
    if not later:
        return ""
    what = " and ".join(later)
    what = what[0].upper() + what[1:-1]
    head = "These are the public cases only. " if hidden_cases else ""
    return (f"{head}{what}, {'are' if len(later) > 1 or hidden_cases != 1 else 'is'} graded "
            f"later: the grade is out of {out_of(autograded_max, written_max)}, so the points "
            "here are feedback, not your grade.")
