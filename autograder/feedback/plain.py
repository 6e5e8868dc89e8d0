"""Plain text of a question's feedback: the JSON contract's `feedback` field, and what CI logs
and the old GitHub Classroom reporter show. Content from the one walk (`render.py`)."""
from __future__ import annotations

from ..model.results import QuestionResult
from .render import render_question


def question_feedback(q: QuestionResult) -> str:
    """The failing cases, each with its further lines, hint and folded repeats, then the
    question's notes."""
    lines = []
    for c in render_question(q).failing:
        lines.append(f"{c.tag} '{c.name}': {c.first_line}")
        lines += c.tail_lines("    ", "  ", "  ")
    lines += q.notes
    return "\n".join(lines)
