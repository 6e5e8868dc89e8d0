"""What a public bundle is: the public cases only, its hidden ones graded later.

The student bundle and the default Classroom 50 folder carry the public cases only (the folder
is publicly downloadable). `autograder build` then records in the bundle's assignment.toml,
as `[hidden_cases]`, what it cut out: how many hidden cases, their points (per question too)
and the full assignment's points, which the bundle alone can no longer compute. Every surface
that shows points from such a bundle (Classroom 50's Release and result.json, the Actions step
summary and log, their terminal lines) says, with these figures, that the points are the
public cases' and that the hidden cases are graded later, so that "13 / 13" never reads as a
grade out of 35.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.assignment import Assignment
from ..feedback.totals import graded_later as _later, out_of

TABLE = "hidden_cases"


@dataclass(frozen=True)
class LeftOut:
    """The hidden cases a public bundle leaves out."""
    cases: int
    points: float
    max_score: float                  # the full assignment's points, hidden cases included
    by_question: dict[str, float]     # hidden points per question id


def left_out(assignment: Assignment) -> LeftOut | None:
    """What the bundle this assignment comes from left out; None for a full assignment (the
    instructor's, a grader's bundle) or one with no hidden case."""
    table = assignment.config.get(TABLE)
    if not isinstance(table, dict) or not table.get("cases"):
        return None
    # In a student's repository (the Actions step) this table is the student's to edit: a
    # value that is not a number makes it no table, never a crash of the step.
    try:
        by_question = dict(table.get("points_by_question") or {})
        return LeftOut(int(table["cases"]), float(table.get("points", 0)),
                       float(table.get("max_score", 0)),
                       {str(k): float(v) for k, v in by_question.items()})
    except (TypeError, ValueError):
        return None


def points_heading(title: str, score: float, max_score: float, left: LeftOut | None) -> str:
    """`Title: 13 / 13 points`, and for a public bundle `... on the public cases`."""
    text = f"{title}: {score:g} / {max_score:g} points"
    return text + " on the public cases" if left else text


def graded_later(assignment: Assignment) -> str:
    """The sentence saying what is still to come after a run on the student's side, with its
    points (`render.graded_later`): the hidden cases a public bundle left out, the written
    questions (graded by hand), and what the grade is out of; "" when nothing is to come."""
    left = left_out(assignment)
    points = assignment_points(assignment)
    return _later(left.cases if left else 0, left.points if left else 0.0,
                       points.autograded, points.written)


@dataclass(frozen=True)
class AssignmentPoints:
    """An assignment's maxima, from its files."""
    public: float           # the public cases' points
    hidden: float           # the hidden cases' points
    hidden_cases: int
    written: float          # the written questions' points

    @property
    def autograded(self) -> float:
        return round(self.public + self.hidden, 6)

    def out_of(self) -> str:
        return out_of(self.autograded, self.written)

    def graded_later(self) -> str:
        return _later(self.hidden_cases, self.hidden, self.autograded, self.written)


def assignment_points(assignment) -> AssignmentPoints:
    """The assignment's maxima: from a public bundle's record of what it left out
    (`left_out`), else from the question files' cases; the written questions' from
    written.toml."""
    written = round(sum(q.points for q in assignment.written), 6)
    left = left_out(assignment)
    public = hidden = 0.0
    hidden_cases = 0
    from ..grading.runner import load_question_file

    for q in assignment.questions:
        for case in load_question_file(str(q.test_file)).test_cases:
            if case.hidden:
                hidden += float(case.points or 0)
                hidden_cases += 1
            else:
                public += float(case.points or 0)
    if left is not None:
        hidden, hidden_cases = left.points, left.cases
    return AssignmentPoints(round(public, 6), round(hidden, 6), hidden_cases, written)


def row_name(qid: str, left: LeftOut | None) -> str:
    """A question's name in a public bundle's per-question rows (Classroom 50's test-name)."""
    if left is None:
        return qid
    extra = left.by_question.get(qid, 0.0)
    if not extra:
        return f"{qid} (public cases)"
    return f"{qid} (public cases; {extra:g} more points in hidden cases, graded later)"
