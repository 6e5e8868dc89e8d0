"""The public face of question files: everything an assignment's `tests/<question>.py` imports.

A question file is an otter exception-based test file (`OK_FORMAT = False`, `@test_case`
functions taking the student's functions by name); each case makes its inputs and calls
`Question.check`, which compares the student's outcome with the hidden reference's (or with a
snapshot of it, for public cases). docs/writing-an-assignment.md documents every name here.
`__all__` is pinned by tests/test_public_faces.py: a name leaves it only on purpose.
"""
from __future__ import annotations

from .checking.answers import MISSING, MissingAnswer, answer_digest, answer_form
from .checking.checks import CheckFailed, Labels, Problem, Property, rows_sum_to_one, zero_where
from .checking.expected import GraderError, recording, snapshot
from .checking.inputs import (array, attention_params, block_params, future_mask, random_mask,
                              randn, tensor, to_numpy, upstream_for)
from .checking.question import Question, questions_in

__all__ = [
    # the question and what a failing case raises
    "Question", "questions_in", "GraderError", "CheckFailed", "Problem", "Labels",
    # properties a case checks besides the values (`Question.check(props=...)`)
    "Property", "rows_sum_to_one", "zero_where",
    # inputs
    "tensor", "array", "to_numpy", "randn", "random_mask", "future_mask", "attention_params",
    "block_params", "upstream_for",
    # expected outcomes
    "snapshot", "recording",
    # knowledge-check answers
    "MISSING", "MissingAnswer", "answer_digest", "answer_form",
]
