"""Submissions that tamper with the grader: flagged in the row, the feedback and the report.

The worker is the student's own process, so code there that touches the engine (its modules,
`sys.modules`, frames, `gc` scans, `ctypes`, the worker's channel, library internals it relies
on) could have switched off every check computed in the worker. The static scan
(`static_scan`) finds such code in the trusted process; this module decides what it costs.

The assignment's `[integrity] on_tamper` setting chooses: `"zero"` (the default) gives no points
on every question whose cases ran after the tampering code could first run (all of them when it
can run at import), with case and question status "integrity"; `"flag"` keeps the grades and
only flags the submission for review.

A source too large or too deep for the scan's budget could not be checked: it is flagged for
review (a cheater could pad a file to hide tampering) but keeps its points under either setting.
"""
from __future__ import annotations

from .assignment import Assignment, AssignmentError
from .results import SubmissionResult
from .static_scan import CUT_SHORT_MESSAGE, INTEGRITY_MESSAGE, ScanResult
from .status import CaseStatus

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
    student function: tampering code inside a function could only run from then on."""

    def __init__(self):
        self.current: str | None = None
        self.first: dict[str, str] = {}

    def called(self, function: str) -> None:
        if self.current is not None:
            self.first.setdefault(function, self.current)


def affected_questions(scan: ScanResult, result: SubmissionResult,
                       log: CallLog | None) -> list[str]:
    """Graded questions whose checks the tampering code could have switched off, in order."""
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


def apply(result: SubmissionResult, scan: ScanResult | None, policy: str,
          log: CallLog | None = None) -> SubmissionResult:
    """Flag `result` when the scan found tampering; under "zero", take the points of the
    questions it could have affected. Returns `result` (changed in place)."""
    if scan is not None and scan.cut_short:
        return _flag_unchecked(result, scan.cut_short, policy)
    if scan is None or not scan.tamper:
        return result
    findings = scan.tamper
    affected = affected_questions(scan, result, log)
    shown = "; ".join(f.describe() for f in findings[:SHOWN_FINDINGS])
    more = f"; and {len(findings) - SHOWN_FINDINGS} more" if len(findings) > SHOWN_FINDINGS \
        else ""
    result.notes.insert(0, f"{INTEGRITY_MESSAGE} ({shown}{more})")
    result.integrity = [f.to_json() for f in findings]
    result.integrity_review = {"on_tamper": policy, "questions": affected,
                               "score_without_penalty": result.score}
    if policy == "zero":
        for qid in affected:
            for case in result.questions[qid].cases:
                case.status, case.kind = STATUS, STATUS
                case.message = INTEGRITY_MESSAGE
                case.hint, case.diagnosis = "", []
    return result


def _flag_unchecked(result: SubmissionResult, reason: str, policy: str) -> SubmissionResult:
    """The scan was cut short: flag the row for review, take no points."""
    result.notes.insert(0, f"{CUT_SHORT_MESSAGE} ({reason})")
    result.integrity = [{"kind": "review", "rule": "scan-cut-short", "line": 0, "code": "",
                         "target": "", "why": reason}]
    result.integrity_review = {"on_tamper": policy, "questions": [],
                               "score_without_penalty": result.score, "scan_cut_short": reason}
    return result


ESCAPE_MESSAGE = "integrity: the grader refused"


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
    review["questions"] = list(dict.fromkeys(list(review.get("questions", [])) + affected))
    review["escapes"] = kinds
    result.integrity_review = review
    return result
