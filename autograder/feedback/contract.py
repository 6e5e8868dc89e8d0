"""The JSON contract other tools read (`grade --json`, grades.json): one entry per submission,
each question with its score, status and feedback text (README "Contracts for machines").
The results' own `to_json` is their data; this adds the words, from the one walk."""
from __future__ import annotations

from ..model.results import QuestionResult, SubmissionResult
from .plain import question_feedback


def question_json(q: QuestionResult) -> dict:
    data = q.to_json()
    # `feedback` right after `status`, where readers of the contract have always found it.
    keys = list(data)
    at = keys.index("status") + 1
    ordered = {k: data[k] for k in keys[:at]}
    ordered["feedback"] = question_feedback(q)
    ordered.update({k: data[k] for k in keys[at:]})
    return ordered


def submission_json(s: SubmissionResult) -> dict:
    data = s.to_json()
    data["questions"].update({qid: question_json(q) for qid, q in s.questions.items()})
    return data


def results_json(assignment: str, submissions: list[SubmissionResult]) -> dict:
    return {"assignment": assignment, "submissions": [submission_json(s) for s in submissions]}
