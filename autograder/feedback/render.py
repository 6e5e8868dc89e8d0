"""The one renderer of a question's feedback: what each case says, whichever output shows it.

`render_question` decides the content: each case's tag (public or hidden), name, message, the
named mistake's hint (once per question), failing cases with the same problem folded into one,
and the notes. The outputs only format its result: the plain text (`plain.py`, the JSON's
`feedback`), the terminal (`terminal.py`), the Markdown files (`course/report.py`) and Gradescope
(`platforms/gradescope/run.py`). None of them decides what a case says, so they cannot drift apart.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..model.results import QuestionResult
from ..model.status import CaseStatus, QuestionStatus

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

    def tail_lines(self, more: str, hint: str, repeats: str, *,
                   shown: Callable[[str], str] = str,
                   hint_shown: Callable[[str], str] | None = None) -> list[str]:
        """What every output prints under the first line: the further lines, the hint and the
        repeats line, each after that output's prefix and through its escaping."""
        lines = [f"{more}{shown(m)}" for m in self.more_lines]
        if self.hint:
            lines.append(f"{hint}{(hint_shown or shown)(self.hint)}")
        if self.repeats:
            lines.append(f"{repeats}{self.repeats_line}")
        return lines


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
