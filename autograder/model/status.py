"""The status vocabulary of grading: what a case and a question can end as.

Every module that writes or compares a status uses these enums. They are `StrEnum`s whose values
are the strings of the JSON contract (``json.dumps`` writes the value), so grades.json, the
Gradescope and Classroom outputs and the report keep the same words as before.

Three statuses are kept apart from the student's own errors:

* ``missing``: there is no submission to grade (a roster student without one, or a repository
  with nothing of the student's before the due date): not an error of the student's code;

* ``integrity``: the submission modifies the grader (flagged for review);
* ``internal error``: the grader itself could not run a case (a stale snapshot, a broken
  reference...): the instructor's problem, never the student's.

This module imports nothing heavy: the report and the Gradescope converter use it without torch.
"""
from __future__ import annotations

import enum
from typing import Iterable


class CaseStatus(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not_attempted"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    FORBIDDEN = "forbidden"
    INTEGRITY = "integrity"
    INTERNAL_ERROR = "internal_error"
    MISSING = "missing"


class QuestionStatus(enum.StrEnum):
    PASSED = "passed"
    PARTIAL = "partial"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"
    ERROR = "error"
    TIMEOUT = "timeout"
    MEMORY = "memory limit"
    FORBIDDEN = "forbidden call"
    INTEGRITY = "integrity"
    INTERNAL_ERROR = "internal error"
    MISSING = "missing"


# A case status that decides its question's status whatever the others, most telling first:
# tampering and the grader's own failure outrank what the student's code did.
_DECISIVE = (
    (CaseStatus.MISSING, QuestionStatus.MISSING),
    (CaseStatus.INTEGRITY, QuestionStatus.INTEGRITY),
    (CaseStatus.INTERNAL_ERROR, QuestionStatus.INTERNAL_ERROR),
    (CaseStatus.FORBIDDEN, QuestionStatus.FORBIDDEN),
    (CaseStatus.TIMEOUT, QuestionStatus.TIMEOUT),
    (CaseStatus.MEMORY, QuestionStatus.MEMORY),
)


def question_status(case_statuses: Iterable[str], score: float) -> QuestionStatus:
    """A question's status from its cases' statuses and the points they earned."""
    statuses = {CaseStatus(s) for s in case_statuses}
    if not statuses or statuses == {CaseStatus.PASSED}:
        return QuestionStatus.PASSED
    for case, question in _DECISIVE:
        if case in statuses:
            return question
    if statuses - {CaseStatus.PASSED} == {CaseStatus.NOT_ATTEMPTED} and score == 0:
        return QuestionStatus.NOT_ATTEMPTED
    if score > 0:
        return QuestionStatus.PARTIAL
    if CaseStatus.ERROR in statuses:
        return QuestionStatus.ERROR
    return QuestionStatus.FAILED


# Question statuses that mean "look at this submission" in the report and grades.csv, in the
# order the CSV's overall status column picks among them.
PROBLEM_STATUSES = (QuestionStatus.INTERNAL_ERROR, QuestionStatus.INTEGRITY, QuestionStatus.ERROR,
                    QuestionStatus.TIMEOUT, QuestionStatus.MEMORY, QuestionStatus.FORBIDDEN)

# Four-letter marks of the terminal feedback, and the short words of the summary table.
MARKS = {
    QuestionStatus.PASSED: "PASS", QuestionStatus.PARTIAL: "PART", QuestionStatus.FAILED: "FAIL",
    QuestionStatus.NOT_ATTEMPTED: "TODO", QuestionStatus.ERROR: "ERR ",
    QuestionStatus.TIMEOUT: "TIME", QuestionStatus.MEMORY: "MEM ",
    QuestionStatus.FORBIDDEN: "FORB", QuestionStatus.INTEGRITY: "FLAG",
    QuestionStatus.INTERNAL_ERROR: "IERR", QuestionStatus.MISSING: "MISS",
}
SHORT = {
    QuestionStatus.NOT_ATTEMPTED: "todo", QuestionStatus.TIMEOUT: "time",
    QuestionStatus.MEMORY: "mem", QuestionStatus.FORBIDDEN: "forb",
    QuestionStatus.ERROR: "err", QuestionStatus.INTEGRITY: "flag",
    QuestionStatus.INTERNAL_ERROR: "ierr", QuestionStatus.MISSING: "missing",
}


# The kinds of problem a failing case records (`CaseResult.kind`: a check's kind, else its
# case status), in the words the class report shows.
KIND_WORDS = {
    "values": "wrong values", "shape": "wrong shape", "dtype": "wrong dtype",
    "type": "wrong type of result", "nan": "NaN or inf in the output",
    "gradient": "wrong gradients", "property": "a required property fails",
    "mutated": "changes its inputs", "answer": "wrong answer",
    "dependency": "calls an unfinished function", "missing": "not defined in the file",
    "not_attempted": "not attempted", "error": "raised an error", "failed": "failed",
    "timeout": "time limit", "memory": "memory limit", "forbidden": "forbidden call",
    "integrity": "flagged for review", "internal_error": "grader error",
    "grader": "grader error",
}


def kind_words(kind: str) -> str:
    """A problem kind in words (an unknown kind with its underscores as spaces)."""
    return KIND_WORDS.get(kind, str(kind).replace("_", " "))
