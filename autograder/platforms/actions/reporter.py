"""The discontinued GitHub Classroom's reporter format, still read by some Actions-based tools:
for each runner id, base64 of `{"version": 1, "status", "max_score", "tests": [{"name",
"status", "score", "message", "test_code", "filename", "line_no", "duration"}]}`, whose
`tests[].score` sum to the points. Runner ids are letters and digits.
"""
from __future__ import annotations

import base64
import json
import re

from ...model.results import QuestionResult
from ...model.safetext import shown_text
from ...model.status import CaseStatus, QuestionStatus


def step_id(question_id: str) -> str:
    """Runner ids must be letters and digits only."""
    return re.sub(r"[^A-Za-z0-9]", "", question_id)


def runner_json(q: QuestionResult, filename: str) -> dict:
    def status(c) -> str:
        return "pass" if c.status == CaseStatus.PASSED else "error" if c.status in (
            CaseStatus.ERROR, CaseStatus.TIMEOUT, CaseStatus.MEMORY,
            CaseStatus.INTERNAL_ERROR) else "fail"

    # The reporter prints these in the run's log: a message from the student's process shows
    # its control and format characters as codes.
    tests = [{"name": shown_text(f"{q.id}: {c.name}"), "status": status(c), "score": c.score,
              "message": shown_text(c.message) if c.status != CaseStatus.PASSED else "passed",
              "test_code": shown_text(c.description or c.name),
              "filename": shown_text(filename), "line_no": 0, "duration": 0}
             for c in q.cases]
    overall = "pass" if q.status == QuestionStatus.PASSED else (
        "error" if any(t["status"] == "error" for t in tests) else "fail")
    return {"version": 1, "status": overall, "max_score": q.max_score, "tests": tests}


def encode_result(data: dict) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode()
