"""The public face of question files: everything an assignment's `tests/<question>.py` imports.

A question file is an otter exception-based test file (`OK_FORMAT = False`, `@test_case`
functions taking the student's functions by name); each case makes its inputs and calls
`Question.check`, which compares the student's outcome with the hidden reference's (or with a
snapshot of it, for public cases). docs/writing-an-assignment.md documents every name here.
`__all__` is pinned by tests/test_public_faces.py: a name leaves it only on purpose.
"""
from __future__ import annotations

from typing import Any

from .checking import question as _question
from .checking.answers import MISSING, MissingAnswer, answer_digest, answer_form
from .checking.checks import CheckFailed, Labels, Problem, Property, rows_sum_to_one, zero_where
from .checking.expected import GraderError, snapshot
from .checking.inputs import (array, attention_params, block_params, future_mask, random_mask,
                              randn, tensor, to_numpy, upstream_for)
from .checking.outputs import Record
from .checking.question import questions_in


def _notebook_hint(record: Any, student: Any) -> str | None:
    """The "likely mistake" line of a check that fails in otter's run (imported there only: a
    grade or a student's check never loads the notebook's naming); otter then shows the failed
    check's message alone, without the question file's source line above it."""
    from .platforms.notebook.hints import NOTEBOOK_NAMER, plain_messages

    plain_messages()
    return NOTEBOOK_NAMER.hint(record, student)


class Question(_question.Question):
    """One question of an assignment (`checking.question.Question`), as question files make
    it. Otter runs question files with no runner of this engine: this face, which every
    question file imports, is where a check in otter's run gets the notebook's naming."""

    notebook_namer = staticmethod(_notebook_hint)


__all__ = [
    # the question and what a failing case raises
    "Question", "questions_in", "GraderError", "CheckFailed", "Problem", "Labels", "Record",
    # properties a case checks besides the values (`Question.check(props=...)`)
    "Property", "rows_sum_to_one", "zero_where",
    # inputs
    "tensor", "array", "to_numpy", "randn", "random_mask", "future_mask", "attention_params",
    "block_params", "upstream_for",
    # expected outcomes
    "snapshot",
    # knowledge-check answers
    "MISSING", "MissingAnswer", "answer_digest", "answer_form",
]
