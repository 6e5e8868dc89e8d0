"""What integrity findings cost: points are withheld only on hard evidence; doubts are flagged
for the instructor's review and cost nothing.

Hard evidence (withholds points under `[integrity] on_tamper = "zero"`, the default):

* a forbidden operation seen at run time: the worker's own check makes those cases
  "forbidden call" (`checking/question.py`), whatever the source looks like;
* an escape the worker's audit hook refused (run-time evidence, applied with
  `withhold(...)` like the scan's proof below);
* tampering the source scan proves: a store into the engine's own modules, resolved statically
  (`ScanResult.tamper`).

`"flag"` keeps every grade and only flags the row. Under either setting the row carries the
evidence and what it would have scored without the penalty (`integrity_review`).

Doubts (never cost points, under either setting): a scan cut short by its budget (the file is
graded on run-time evidence alone), what the scan cannot resolve or cannot prove (a name built at
run time on a library module, frames, `gc`, `ctypes`, `sys.modules` scans, stores into library
modules: `ScanResult.review`), and a forbidden routine the scan sees on a graded function's call
graph that the run-time check did not report (if it had run, the check would have stopped it).
They flag the row: the notes, the feedback, the report's review list, grades.json
(`integrity`, entries of kind "review") and a FLAG in the terminal table.
"""
from __future__ import annotations

from typing import Sequence

from ..model.assignment import Assignment, AssignmentError
from ..model.results import SubmissionResult
from ..static_scan import (CUT_SHORT_MESSAGE, INTEGRITY_MESSAGE, REVIEW_MESSAGE, Finding,
                          ScanResult)
from ..model.status import CaseStatus, QuestionStatus

ON_TAMPER = ("zero", "flag")
STATUS = CaseStatus.INTEGRITY
SHOWN_FINDINGS = 3


def tamper_policy(assignment: Assignment) -> str:
    """The assignment's `[integrity] on_tamper`: "zero" (default) or "flag"."""
    section = assignment.config.get("integrity", {})
    value = section.get("on_tamper", "zero") if isinstance(section, dict) else None
    if value not in ON_TAMPER:
        raise AssignmentError(f"{assignment.root / 'assignment.toml'}: [integrity] on_tamper "
                              f"must be one of {', '.join(map(repr, ON_TAMPER))}, not "
                              f"{value!r}")
    return value


class CallLog:
    """Which question the trusted side was grading when it first asked the worker to call each
    student function (tampering code inside a function could only run from then on), and the
    shortcut sightings of the scan per question (`sighted`)."""

    def __init__(self):
        self.current: str | None = None
        self.first: dict[str, str] = {}
        self.sightings: dict[str, list[Finding]] = {}

    def called(self, function: str) -> None:
        if self.current is not None:
            self.first.setdefault(function, self.current)

    def sighted(self, findings: Sequence[Finding]) -> None:
        """The scan sees a forbidden routine on the function the current question calls."""
        if self.current is None:
            return
        known = self.sightings.setdefault(self.current, [])
        for f in findings:
            if f not in known:
                known.append(f)


def affected_questions(scan: ScanResult, result: SubmissionResult,
                       log: CallLog | None) -> list[str]:
    """Graded questions whose checks the proven tampering could have switched off, in order."""
    order = list(result.questions)
    reach = scan.tamper_reach()
    if not reach:
        return []
    if any(fns is None for fns in reach.values()) or log is None:
        return order
    functions = set().union(*reach.values())
    starts = [order.index(log.first[fn]) for fn in functions
              if log.first.get(fn) in order]
    # Never seen called (or called only outside any question): assume it ran from the start.
    return order[min(starts):] if starts else order


def _shown(described: list[str]) -> str:
    more = f"; and {len(described) - SHOWN_FINDINGS} more" if len(described) > SHOWN_FINDINGS \
        else ""
    return "; ".join(described[:SHOWN_FINDINGS]) + more


def withhold(result: SubmissionResult, evidence: list[dict], questions: list[str], policy: str,
             message: str = INTEGRITY_MESSAGE) -> SubmissionResult:
    """Hard evidence: flag the row and, under "zero", take the points of `questions`.
    `evidence` holds findings in their JSON form (kind "tamper"). Any source of hard evidence
    (the scan's proof, escapes the worker refused) goes through here, so the row says the same
    thing whichever found it."""
    described = [_describe(e) for e in evidence]
    result.notes.insert(0, f"{message} ({_shown(described)})")
    review = result.integrity_review or {}
    result.integrity = list(evidence) + [f for f in result.integrity if f not in evidence]
    withheld = list(review.get("questions", []))
    withheld += [q for q in questions if q not in withheld]
    result.integrity_review = {**review, "on_tamper": policy, "evidence": "hard",
                               "questions": withheld,
                               "score_without_penalty": review.get("score_without_penalty",
                                                                   result.score)}
    if policy == "zero":
        for qid in questions:
            for case in result.questions[qid].cases:
                case.status, case.kind = STATUS, STATUS
                case.message = message
                case.hint, case.diagnosis = "", []
    return result


def flag_for_review(result: SubmissionResult, evidence: list[dict], note: str,
                    policy: str, **extra) -> SubmissionResult:
    """A doubt: flag the row for review (a note first, the findings in `integrity`), take no
    points. A row already holding hard evidence keeps its verdict and gains the findings."""
    result.notes.insert(0, note)
    result.integrity = result.integrity + [e for e in evidence if e not in result.integrity]
    review = result.integrity_review or {"on_tamper": policy, "evidence": "review",
                                         "questions": [],
                                         "score_without_penalty": result.score}
    result.integrity_review = {**review, **extra}
    return result


def _describe(e: dict) -> str:
    where = f"line {e['line']}: " if e.get("line") else ""
    return f"{where}`{e.get('code', '')}` {e.get('why', '')}".rstrip()


def apply(result: SubmissionResult, scan: ScanResult | None, policy: str,
          log: CallLog | None = None) -> SubmissionResult:
    """The scan's part of a row's verdict: its proof withholds points (`withhold`), its doubts,
    a budget cut short and shortcut sightings flag the row for review. Returns `result`
    (changed in place)."""
    if scan is None:
        return result
    # Doubts first, proof last: the row's first note is its weightiest.
    _review_sightings(result, log, policy)
    if scan.review:
        described = [f.describe() for f in scan.review]
        flag_for_review(result, [f.to_json() for f in scan.review],
                        f"{REVIEW_MESSAGE} ({_shown(described)})", policy)
    if scan.cut_short:
        flag_for_review(result, [{"kind": "review", "rule": "scan-cut-short", "line": 0,
                                  "code": "", "target": "", "why": scan.cut_short}],
                        f"{CUT_SHORT_MESSAGE} ({scan.cut_short})", policy,
                        scan_cut_short=scan.cut_short)
    if scan.tamper:
        withhold(result, [f.to_json() for f in scan.tamper],
                 affected_questions(scan, result, log), policy)
    return result


def _review_sightings(result: SubmissionResult, log: CallLog | None, policy: str) -> None:
    """Shortcuts the scan saw on a question's functions that the run-time check did not report:
    a note on the question and a review flag on the row, no points taken."""
    if log is None:
        return
    evidence = []
    for qid, found in log.sightings.items():
        q = result.questions.get(qid)
        if q is None or q.status in (QuestionStatus.FORBIDDEN, QuestionStatus.INTEGRITY):
            continue        # run-time evidence (or proof) already decided the question
        said = "; ".join(f.describe() for f in found[:SHOWN_FINDINGS])
        q.notes.append(f"flagged for review: the source check saw code that may use a library "
                       f"version of what this question asks you to write ({said}); the check "
                       "made while your code ran did not see one called, so no points were "
                       "taken; your instructor will look")
        evidence += [{**f.to_json(), "kind": "review", "question": qid} for f in found]
    if evidence:
        shown = _shown([_describe(e) for e in evidence])
        flag_for_review(result, evidence, f"{REVIEW_MESSAGE} (library shortcuts seen in the "
                                          f"source: {shown})", policy)


ESCAPE_MESSAGE = "integrity: the grader refused"
UNARMED_NOTE = ("note: the grader could not install its check of forbidden routines for "
                "some questions ({}); they were not graded (no points) and the submission is "
                "flagged for review")


def flag_unarmed(result: SubmissionResult, unarmed: list[dict],
                 policy: str = "zero") -> SubmissionResult:
    """Questions whose worker could not install its refusals (`sandbox/evidence.UNARMED`):
    their cases already ended as errors (no points); the row says why and is flagged for the
    instructor's review. Never points with a note: where grades count, an unchecked question
    is not graded. Returns `result` (changed in place)."""
    if not unarmed:
        return result
    reasons = "; ".join(dict.fromkeys(u["reason"] for u in unarmed))
    questions = [u["question"] or "import" for u in unarmed]
    evidence = [{"kind": "review", "rule": "unarmed", "line": 0, "code": "",
                 "target": u["question"] or "", "why": u["reason"]} for u in unarmed]
    return flag_for_review(result, evidence, UNARMED_NOTE.format(reasons), policy,
                           unarmed=questions)


def withhold_for_escapes(result: SubmissionResult, escapes: list[dict],
                         policy: str = "zero") -> SubmissionResult:
    """Withhold the points of the questions during which the worker's audit hook refused an
    escape (`sandbox/audit.py`): hard evidence, read from how the worker ended, which nothing
    the student's process sends can forge or hide. An escape at import (`question` None)
    affects every question. Each affected case gets the status "integrity" and a message
    saying which escape was refused; the row lists the escapes for review. The assignment's
    `on_tamper` (`policy`) is recorded but does not apply: a refused escape is not a doubt.
    Returns `result` (changed in place)."""
    if not escapes:
        return result
    order = list(result.questions)
    if any(e.get("question") is None for e in escapes):
        affected = order
    else:
        affected = [q for q in order if any(e.get("question") == q for e in escapes)]
    before = result.score
    for qid in affected:
        said = [e["escape"] for e in escapes if e.get("question") in (qid, None)]
        message = f"{ESCAPE_MESSAGE} {'; '.join(dict.fromkeys(said))} while your code ran " \
                  "(a check your code must not reach); flagged for review"
        for case in result.questions[qid].cases:
            case.status, case.kind = STATUS, STATUS
            case.message, case.hint, case.diagnosis = message, "", []
    kinds = list(dict.fromkeys(e["escape"] for e in escapes))
    result.notes.insert(0, f"{ESCAPE_MESSAGE} {'; '.join(kinds)}; flagged for review")
    result.integrity = list(result.integrity) + [
        {"kind": "escape", "rule": "audit-hook", "line": 0, "code": "", "target": e["escape"],
         "why": "refused by the worker's audit hook while "
                + (f"question {e['question']} ran" if e.get("question") else "importing")}
        for e in escapes]
    review = dict(result.integrity_review or {})
    review.setdefault("score_without_penalty", before)
    review.setdefault("on_tamper", policy)
    review["evidence"] = "hard"
    review["questions"] = list(dict.fromkeys(list(review.get("questions", [])) + affected))
    review["escapes"] = kinds
    result.integrity_review = review
    return result
