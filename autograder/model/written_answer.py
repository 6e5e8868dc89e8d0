"""One written answer in a graded submission: its text and, once a grader decided, its score.

In grades.json a written question sits among the others under `questions`, with
`"kind": "written"`, the `answer` text and `score` null until a grader decides (`status`
"pending"; "regrade" when the answer changed after it was graded). A question left unanswered
scores 0 without waiting for anyone (`status` "not attempted"); a grader may still grade it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

KIND = "written"


class Status:
    PENDING = "pending"              # answered, waiting for a grader
    GRADED = "graded"
    REGRADE = "regrade"              # changed since it was graded: waiting for a grader again
    NOT_ATTEMPTED = "not attempted"  # no answer: 0 points unless a grader decides otherwise
    MISSING = "missing"              # no submission at all (a roster student without one)


WAITING = (Status.PENDING, Status.REGRADE)


@dataclass
class WrittenAnswer:
    id: str
    max_score: float
    answer: str = ""                 # the student's text (cut at collect.MAX_CHARS)
    length: int = 0                  # characters in the student's text before any cut
    status: str = Status.NOT_ATTEMPTED
    score: float | None = 0.0        # None while waiting for a grader
    rubric: list[str] = field(default_factory=list)     # ids of the items that apply
    feedback: list[str] = field(default_factory=list)   # what the student reads, line by line
    comment: str = ""
    grader: str | None = None
    notes: list[str] = field(default_factory=list)      # about collecting the answer

    @property
    def waiting(self) -> bool:
        return self.status in WAITING

    @property
    def points(self) -> float:
        """What the answer counts in a total now: its score, 0 while it waits."""
        return self.score or 0.0

    def to_json(self) -> dict:
        return {"kind": KIND, "score": self.score, "max_score": self.max_score,
                "status": self.status, "answer": self.answer, "answer_chars": self.length,
                "rubric": list(self.rubric), "comment": self.comment,
                "feedback": "\n".join(self.feedback), "grader": self.grader,
                "notes": list(self.notes)}

    @classmethod
    def from_json(cls, qid: str, data: dict) -> "WrittenAnswer":
        score = data.get("score")
        feedback = data.get("feedback") or ""
        return cls(qid, float(data.get("max_score", 0.0)), str(data.get("answer") or ""),
                   int(data.get("answer_chars") or 0), str(data.get("status")),
                   None if score is None else float(score), list(data.get("rubric") or []),
                   feedback.split("\n") if feedback else [], str(data.get("comment") or ""),
                   data.get("grader"), list(data.get("notes") or []))


def is_written(question_json: dict) -> bool:
    """Whether a question of grades.json is a written one."""
    return isinstance(question_json, dict) and question_json.get("kind") == KIND
