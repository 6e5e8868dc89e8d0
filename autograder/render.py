"""The one renderer of a question's feedback: what each case says, whichever output shows it.

`render_question` decides the content: each case's tag (public or hidden), name, message, the
named mistake's hint (once per question), failing cases with the same problem folded into one,
and the notes. The outputs only format its result: `QuestionResult.feedback` (the JSON's
`feedback`), the terminal (`feedback.py`), the Markdown files (`course/report.py`) and Gradescope
(`platforms/gradescope.py`). None of them decides what a case says, so they cannot drift apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from .status import CaseStatus, QuestionStatus


class QuestionResult(Protocol):
    """What the renderer reads of a graded question (`results.QuestionResult`); declared here
    so that results may use the renderer without the two importing each other."""
    id: str
    cases: list[Any]
    notes: list[str]

    @property
    def score(self) -> float: ...

    @property
    def max_score(self) -> float: ...

    @property
    def status(self) -> QuestionStatus: ...

STUB_LINE = "not implemented yet (the stub still raises NotImplementedError)"


# Marks the further lines of a multi-line error message in every output.
CONTINUED = "| "


@dataclass
class CaseView:
    name: str
    hidden: bool
    status: CaseStatus
    points: float
    message: str = ""       # empty for a passing case
    hint: str = ""          # the named mistake, only where it is first shown in the question
    repeats: int = 0        # further failing cases with the same problem, folded into this one
    picture: dict | None = None   # its heatmaps' data (autograder.pictures), public cases only

    @property
    def passed(self) -> bool:
        return self.status == CaseStatus.PASSED

    @property
    def first_line(self) -> str:
        """The message's first line; a library error's further lines are `more_lines`, which
        every output shows indented under it (each output keeps a line to one line)."""
        return self.message.split("\n", 1)[0]

    @property
    def more_lines(self) -> list[str]:
        """The further lines, each marked with `CONTINUED` so that text from the student's
        process never stands on a line of its own looking like the grader's."""
        return [f"{CONTINUED}{line.strip()}" for line in self.message.split("\n")[1:]
                if line.strip()]

    @property
    def tag(self) -> str:
        return "hidden case" if self.hidden else "case"

    @property
    def repeats_line(self) -> str:
        return f"(and {self.repeats} more case(s) with the same problem)" if self.repeats else ""


@dataclass
class QuestionView:
    id: str
    score: float
    max_score: float
    status: QuestionStatus
    cases: list[CaseView] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)   # a question not attempted: what it says
    notes: list[str] = field(default_factory=list)
    decision: str = ""   # the instructor's override of the score, with its reason

    @property
    def not_attempted(self) -> bool:
        return self.status == QuestionStatus.NOT_ATTEMPTED

    @property
    def missing(self) -> bool:
        return self.status == QuestionStatus.MISSING

    @property
    def summarised(self) -> bool:
        """Not attempted (its `todo` lines say what it says) or missing (the row says why):
        its cases are not listed one by one."""
        return self.not_attempted or self.missing

    @property
    def is_stub(self) -> bool:
        """Not attempted because the stub still raises NotImplementedError."""
        return self.todo == [STUB_LINE]

    @property
    def failing(self) -> list[CaseView]:
        return [c for c in self.cases if not c.passed]


def _todo_lines(q: QuestionResult) -> list[str]:
    """What a question nobody started says: one line for stubs still raising
    NotImplementedError, else each case's own words (e.g. answers still None)."""
    messages: list[str] = []
    for c in q.cases:
        if c.message and c.message not in messages:
            messages.append(c.message)
    if not messages or all("NotImplementedError" in m for m in messages):
        return [STUB_LINE]
    return messages


def override_line(q: QuestionResult) -> str:
    """`Points set by your instructor to 6 (the grader gave 5): <reason>`, or "" without an
    override."""
    if q.override is None:
        return ""
    return (f"Points set by your instructor to {q.score:g} (the grader gave "
            f"{q.computed_score:g}): {q.override.get('reason', '')}")


# A tail of a hint this long, already shown under the question, is its advice repeated.
_ADVICE_MIN = 60
SAME_ADVICE = "The advice above applies here too."


def _advice_once(hint: str, shown: set[str]) -> str:
    """A hint whose closing sentences an earlier hint of the question already gave (one
    mistake named on two functions, each with its own first sentences) keeps what is its own
    and points up for the rest, so the advice is read once."""
    for cut in re.finditer(r"\. ", hint):
        tail = hint[cut.end():]
        if len(tail) < _ADVICE_MIN:
            break
        if any(prev.endswith(tail) for prev in shown):
            return hint[:cut.end()] + SAME_ADVICE
    return hint


def render_question(q: QuestionResult, *, public_only: bool = False,
                    said: str | None = None) -> QuestionView:
    """The content of one question's feedback. `public_only` leaves hidden cases out (a
    summary shown before the hidden results are released). `said`: a problem the output has
    already stated once for the whole submission (a syntax error): cases that only repeat it
    are not listed again."""
    view = QuestionView(q.id, q.score, q.max_score, q.status, notes=list(q.notes),
                        decision=override_line(q))
    if view.not_attempted:
        view.todo = _todo_lines(q)
    hinted: set[str] = set()
    last: CaseView | None = None     # the last failing case shown, to fold repeats into
    last_problem: tuple[str, str] | None = None
    for c in q.cases:
        if public_only and c.hidden:
            continue
        status = CaseStatus(c.status)
        if status == CaseStatus.PASSED:
            view.cases.append(CaseView(c.name, c.hidden, status, c.points))
            continue
        hint = c.hint or ""
        if said and c.message == said and not hint:
            continue
        if last is not None and last_problem == (c.message, hint):
            last.repeats += 1
            continue
        shown = "" if not hint or hint in hinted else _advice_once(hint, hinted)
        hinted.add(hint)
        last, last_problem = CaseView(c.name, c.hidden, status, c.points, c.message, shown,
                                      picture=None if c.hidden else
                                      getattr(c, "picture", None)), (c.message, hint)
        view.cases.append(last)
    return view


# ------------------------------------------------------------------ totals
# The totals of a submission and of an assignment, in the one set of words every output uses.
#
# A grade is out of the assignment's autograded points (its question files' cases) plus its
# written points (written.toml, graded by hand). Until a grader decides, a written answer
# counts 0 and waits; an output that shows a total says so, in the words made here:
#
# * `Totals.text()`: `42 / 52 (autograded 42 / 42, written 0 / 10 with 10 points waiting for a
#   grader)`, or `42 / 42` for an assignment without written questions;
# * `Totals.written_cell()`: the written part in a table's cell (`wait 0/10`);
# * `out_of()`: the maximum, `52 in all (42 autograded, 10 written and graded by hand)`;
# * `graded_later()`: what a run on the student's side leaves for later (Classroom 50, the
#   Actions step, a student's `check`); `platforms.public_only.assignment_points` the maxima,
#   derived from the assignment (never written by hand).
#
# The terminal (the class table, `grade --feedback`, `check`), the feedback files, report.html,
# Classroom 50's Release and log, the Actions summary and log, Gradescope's output and the pages
# of docs/ (checked by tests/test_docs_totals.py) say a total this way.


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
