"""Results of grading as values: cases, questions, submissions, their data (`to_json`, what
the class cache keeps) and their rebuilding from it. The JSON contract, which adds the
feedback text, is in `autograder.feedback.contract`."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Iterable

from .status import CaseStatus, QuestionStatus, question_status
from .written_answer import WrittenAnswer, is_written

if TYPE_CHECKING:
    from ..checking.problems import Advice, Problem

# Fields of a case's result that its JSON leaves out: what later steps of the same run read.
_RUN_ONLY = {"run_only": True}


@dataclass
class CaseResult:
    name: str
    points: float
    hidden: bool
    status: CaseStatus
    message: str = ""           # what the student reads (hidden-safe for hidden cases)
    kind: str = ""              # the kind of problem, for reports (shape, values, gradient...)
    description: str = ""
    diagnosis: list[str] = field(default_factory=list)   # ids of the known mistake it shows
    hint: str = ""              # that mistake in plain words, shown under the message
    # A failing public case's probabilities, the student's beside the expected ones
    # (`autograder.pictures`): drawn as heatmaps in the HTML feedback and the notebook.
    picture: dict | None = None
    # A hidden case's wrong output, digested (memo/answer_digest.py): for the instructor's
    # similarity report only, never shown.
    output_digest: str = ""
    # For the steps after the run (`runner`), not in the JSON: the problem the message says
    # (its advice may be replaced), where the student's error was raised, and the forbidden
    # routines refused in this case.
    problem: "Problem | None" = field(default=None, repr=False, compare=False,
                                      metadata=_RUN_ONLY)
    error_function: str = field(default="", metadata=_RUN_ONLY)
    refused: list[str] = field(default_factory=list, metadata=_RUN_ONLY)

    @property
    def score(self) -> float:
        return self.points if self.status == CaseStatus.PASSED else 0.0

    def __post_init__(self) -> None:
        self.status = CaseStatus(self.status)   # a known status, whoever built the result

    def fail_with(self, problem: "Problem", status: CaseStatus) -> None:
        """This case failed on `problem`: its status, kind and message (the hidden case's
        message where the case is hidden)."""
        self.status, self.kind, self.problem = CaseStatus(status), problem.kind, problem
        self.message = problem.text(self.hidden)

    def advise(self, advice: "Advice | None") -> None:
        """Replace the advice of this case's problem (None drops it), and its message."""
        if self.problem is not None:
            self.problem = replace(self.problem, advice=advice)
            self.message = self.problem.text(self.hidden)


_PLAIN = (str, int, float, bool, type(None))
# The fields a case's data holds (the run-only ones stay in the process).
_CASE_FIELDS = [f.name for f in fields(CaseResult) if not f.metadata.get("run_only")]


def _case_json(c: CaseResult) -> dict:
    # Copies of what could be changed through the data (lists, the picture's dict); numbers,
    # text and statuses as they are.
    data = {}
    for name in _CASE_FIELDS:
        value = getattr(c, name)
        data[name] = value if isinstance(value, _PLAIN) else copy.deepcopy(value)
    data["score"] = c.score
    if data.get("picture") is None:
        data.pop("picture", None)     # most cases have none
    return data


@dataclass
class QuestionResult:
    id: str
    cases: list[CaseResult]
    notes: list[str] = field(default_factory=list)
    called: list[str] = field(default_factory=list)   # other student functions this one used
    # The instructor's decision (`grade --overrides`): {"points": float, "reason": str}; the
    # question's score is then those points, the cases' sum staying as `computed_score`.
    override: dict | None = None

    @property
    def computed_score(self) -> float:
        """The points the cases passed earn (the score unless an override sets it)."""
        return round(sum(c.score for c in self.cases), 6)

    @property
    def score(self) -> float:
        if self.override is not None:
            return round(float(self.override["points"]), 6)
        return self.computed_score

    @property
    def max_score(self) -> float:
        return round(sum(c.points for c in self.cases), 6)

    @property
    def status(self) -> QuestionStatus:
        # What the grader saw: an override changes the points, not the status.
        return question_status((c.status for c in self.cases), self.computed_score)

    def to_json(self) -> dict:
        """The question as data (what the class cache keeps); the JSON contract adds the
        feedback text (`autograder.feedback.contract`)."""
        data = {"score": self.score, "max_score": self.max_score, "status": self.status,
                "notes": list(self.notes),
                "called": list(self.called),
                "cases": [_case_json(c) for c in self.cases]}
        if self.override is not None:
            data["computed_score"] = self.computed_score
            data["override"] = dict(self.override)
        return data


@dataclass
class SubmissionResult:
    path: str
    questions: dict[str, QuestionResult]
    error: str | None = None            # why the submission could not be graded normally
    sandbox: str | None = None          # the isolation level it was graded under
    seconds: float = 0.0
    student: str | None = None          # set by class grading
    notes: list[str] = field(default_factory=list)
    # Tampering with the grader found in the source (static_scan.Finding.to_json), and what it
    # cost: {"on_tamper", "questions" (those given no points under "zero"),
    # "score_without_penalty"}. A source too large for the scan has one entry, rule
    # "scan-cut-short", and costs nothing ("scan_cut_short" in the review says why).
    integrity: list[dict] = field(default_factory=list)
    integrity_review: dict | None = None
    # Written questions (graded by hand): in the totals with their score, 0 while they wait.
    written: dict[str, WrittenAnswer] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions.values())
                     + sum(w.points for w in self.written.values()), 6)

    @property
    def max_score(self) -> float:
        return round(sum(q.max_score for q in self.questions.values())
                     + sum(w.max_score for w in self.written.values()), 6)

    @property
    def missing(self) -> bool:
        """No submission was graded (every question "missing"): a row the class statistics
        leave out."""
        return bool(self.questions) and all(q.status == QuestionStatus.MISSING
                                            for q in self.questions.values())

    def to_json(self) -> dict:
        data = {"path": self.path, "score": self.score, "max_score": self.max_score,
                "error": self.error, "sandbox": self.sandbox, "seconds": round(self.seconds, 3),
                "questions": {k: q.to_json() for k, q in self.questions.items()}}
        if self.written:
            data["questions"].update({k: w.to_json() for k, w in self.written.items()})
            data["written_pending"] = sum(w.waiting for w in self.written.values())
        if self.student is not None:
            data["student"] = self.student
        if self.notes:
            data["notes"] = list(self.notes)
        if self.integrity:
            data["integrity"] = [dict(f) for f in self.integrity]
            data["integrity_review"] = dict(self.integrity_review or {})
        return data


def question_from_json(qid: str, q: dict) -> QuestionResult:
    """Rebuild a question from `QuestionResult.to_json`."""
    cases = [CaseResult(**{k: v for k, v in c.items() if k in _CASE_FIELDS})
             for c in q.get("cases", [])]
    override = q.get("override")
    return QuestionResult(qid, cases, notes=list(q.get("notes", [])),
                          called=list(q.get("called", [])),
                          override=dict(override) if isinstance(override, dict) else None)


def submission_from_json(data: dict) -> SubmissionResult:
    """Rebuild a result from `SubmissionResult.to_json` (used by the cache of class grading)."""
    questions = {qid: question_from_json(qid, q) for qid, q in data["questions"].items()
                 if not is_written(q)}
    written = {qid: WrittenAnswer.from_json(qid, q) for qid, q in data["questions"].items()
               if is_written(q)}
    return SubmissionResult(data["path"], questions, error=data.get("error"),
                            sandbox=data.get("sandbox"), seconds=data.get("seconds", 0.0),
                            student=data.get("student"), notes=list(data.get("notes", [])),
                            integrity=list(data.get("integrity", [])),
                            integrity_review=data.get("integrity_review"), written=written)


# ------------------------------------------------------------------ named mistakes

def _case_diagnoses(result: Any) -> Iterable[tuple[str, list[str]]]:
    """(question id, mistake ids of one case) for a SubmissionResult or its JSON form."""
    questions = result.get("questions", {}) if isinstance(result, dict) else result.questions
    for qid, q in questions.items():
        cases = q.get("cases", []) if isinstance(q, dict) else q.cases
        for c in cases:
            ids = c.get("diagnosis") if isinstance(c, dict) else getattr(c, "diagnosis", None)
            yield qid, list(ids or [])


def diagnoses(result: Any) -> set[str]:
    """Every mistake id named anywhere in one submission's feedback."""
    return {m for _, ids in _case_diagnoses(result) for m in ids}


def mistake_counts(results: Iterable[Any]) -> dict[str, dict[str, int]]:
    """{question: {mistake id: number of submissions whose feedback on it names the mistake}}.

    Accepts SubmissionResult objects or their JSON form. Mistakes are sorted by count, largest
    first; questions without a named mistake are left out.
    """
    counts: dict[str, dict[str, int]] = {}
    for r in results:
        seen: dict[str, set[str]] = {}
        for qid, ids in _case_diagnoses(r):
            seen.setdefault(qid, set()).update(ids)
        for qid, ids in seen.items():
            for m in ids:
                per = counts.setdefault(qid, {})
                per[m] = per.get(m, 0) + 1
    return {q: dict(sorted(per.items(), key=lambda kv: (-kv[1], kv[0])))
            for q, per in counts.items()}
