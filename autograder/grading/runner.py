"""Run an assignment's question files against one submission's functions.

The functions are either the student's own (in-process, for `autograder check`) or stand-ins
that forward to a sandboxed worker (`autograder grade`). One question file's cases run in
`questions.run_question`; this adds what a whole submission needs: the diagnosis session, the
notes across questions, and the rows of submissions that could not run.
"""
from __future__ import annotations

import time
from typing import Callable

from .. import diagnose
from ..checking.checks import OVERFLOW_ADVICE  # noqa: F401 - the advice texts, for tests
from ..checking.context import CheckContext, Mode, Recording
from ..checking.problems import Advice
from ..checking.question import SHAPE_ADVICE  # noqa: F401
from ..model.assignment import Assignment
# The core loop, re-exported: most callers know these as the runner's.
from .questions import QuestionStopped, load_question_file, run_question  # noqa: F401
from ..model.results import CaseResult, QuestionResult, SubmissionResult
from ..model.status import CaseStatus, QuestionStatus
from ..sandbox.routines import table_for


def forbidden_names(assignment: Assignment) -> list[str]:
    """Every forbidden entry of the assignment's questions, in order."""
    names: list[str] = []
    for q in assignment.questions:
        names += [n for n in question_forbidden(assignment, q.id) if n not in names]
    return names


def question_forbidden(assignment: Assignment, qid: str) -> list[str]:
    """The forbidden entries of one question, in order: those `assignment.toml` lists, then its
    question file's (`Question(forbidden=...)`): the set its sandboxed worker refuses."""
    from ..checking.question import questions_in

    info = assignment.question(qid)
    names = list(dict.fromkeys(info.forbidden))
    load_question_file(str(info.test_file))
    for question in questions_in(info.test_file):
        names += [n for n in question.own_forbidden if n not in names]
    return names


def refused_targets(assignment: Assignment) -> tuple[list[str], list[str]]:
    """(aten operators, Python-level targets) the assignment's forbidden entries refuse: what
    the sandbox's fork server looks up once for every worker (`Sandbox.preload`)."""
    table = table_for(assignment.routines)
    ops: list[str] = []
    python: list[str] = []
    for name in forbidden_names(assignment):
        plan = table.plan(name)
        ops += [o for o in plan.ops + [o for sig in plan.signatures for g in sig for o in g]
                if o not in ops]
        python += [p for p in plan.python if p not in python]
    return ops, python


# Failing cases whose own status says the values were never the problem: a helper question's
# mistake cannot be behind them.
_NOT_FROM_HELPERS = (CaseStatus.FORBIDDEN, CaseStatus.NOT_ATTEMPTED)


def _failing(q: QuestionResult) -> list:
    return [c for c in q.cases if CaseStatus(c.status) != CaseStatus.PASSED]


def _helper_may_explain(q: QuestionResult, helper: QuestionResult) -> bool:
    """Whether the evidence supports blaming a failing helper question for `q`'s failures: the
    helper fails on something other than forbidden calls (those give right values), and some
    failing case of `q` failed on its results, without a named mistake of `q`'s own (a mistake
    named in `q` that the helper's cases name too is the helper's)."""
    if all(CaseStatus(c.status) in _NOT_FROM_HELPERS for c in _failing(helper)):
        return False
    helper_mistakes = {m for c in helper.cases for m in (c.diagnosis or [])}
    for c in _failing(q):
        if CaseStatus(c.status) in _NOT_FROM_HELPERS:
            continue
        own = [m for m in (c.diagnosis or []) if m not in helper_mistakes]
        if not own:
            return True
    return False


def add_dependency_notes(assignment: Assignment, questions: dict[str, QuestionResult]) -> None:
    """Say when a question fails while calling a student function that fails its own question,
    where the helper's failure may be behind it (`_helper_may_explain`)."""
    for q in questions.values():
        if q.status == QuestionStatus.PASSED:
            continue
        blamed: dict[str, list[str]] = {}
        for fn in q.called:
            other = assignment.question_of(fn)
            if other and other != q.id and other in questions and \
                    questions[other].status != QuestionStatus.PASSED and \
                    _helper_may_explain(q, questions[other]):
                blamed.setdefault(other, []).append(f"`{fn}`")
        for other, fns in blamed.items():
            verb = "does" if len(fns) == 1 else "do"
            q.notes.append(f"note: this calls your {' and '.join(fns)}, which {verb} not pass "
                           f"question '{other}' yet; that may be part of what goes wrong here, "
                           f"so look at '{other}' first")
        _retarget_messages(assignment, q, questions, blamed)


def add_refusal_notes(questions: dict[str, QuestionResult]) -> None:
    """Say, under each question it costs, when one forbidden routine is refused in several
    questions (a helper that calls the library version is called by every question above it:
    one line costs them all)."""
    where: dict[str, list[str]] = {}
    for q in questions.values():
        for c in q.cases:
            for routine in c.refused:
                if q.id not in where.setdefault(routine, []):
                    where[routine].append(q.id)
    for routine, qids in where.items():
        if len(qids) < 2:
            continue
        listed = ", ".join(qids[:-1]) + " and " + qids[-1]
        for qid in qids:
            questions[qid].notes.append(
                f"note: `{routine}` is refused in every question whose functions reach it: "
                f"{listed}; that one call costs all {len(qids)}")


def _passes(questions: dict[str, QuestionResult], qid: str | None) -> bool:
    return qid is not None and qid in questions and \
        questions[qid].status == QuestionStatus.PASSED


def _advice_kind(case: CaseResult) -> str:
    problem = case.problem
    return problem.advice.kind if problem is not None and problem.advice is not None else ""


def _retarget_messages(assignment: Assignment, q: QuestionResult,
                       questions: dict[str, QuestionResult],
                       blamed: dict[str, list[str]]) -> None:
    """Say only what the evidence supports, by replacing or dropping a case's advice (the
    advice a check gives from the error or the values alone, `problems.Advice`):

    * a shape error raised at a line of another of the student's functions, one whose own
      question passes, while this question calls a function that fails its question: the line
      is not the place to look, the failing helper is ("this calls your X, which fails
      question Y");
    * NaN on large inputs while every student function this question calls passes its own
      question (large inputs included): an overflow in those is not the cause, so the advice
      to subtract the maximum is replaced by what else gives NaN;
    * the same advice under a case that names its mistake: the hint says what to change.
    """
    own = set(assignment.question(q.id).functions)
    helpers_pass = bool(q.called) and all(
        _passes(questions, assignment.question_of(fn)) for fn in q.called
        if assignment.question_of(fn) not in (None, q.id))
    for c in _failing(q):
        where = c.error_function
        if blamed and _advice_kind(c) == "shape" and where and where not in own \
                and _passes(questions, assignment.question_of(where)):
            other, fns = next(iter(blamed.items()))
            verb = "fails" if len(fns) == 1 else "fail"
            # The advice (with the question's own shape hints) is about the line; the evidence
            # points at the helper instead.
            c.advise(Advice("helper", f"; that line is in your `{where}`, which passes its "
                                      f"question: this calls your {' and '.join(fns)}, which "
                                      f"{verb} question '{other}', so the shapes it got may "
                                      f"come from there"))
        if _advice_kind(c) == "overflow" and c.diagnosis:
            # The named mistake says what to change; the generic advice may be what the code
            # already does (a softmax that subtracts the whole tensor's maximum).
            c.advise(None)
        if _advice_kind(c) == "overflow" and helpers_pass and \
                any(assignment.question_of(fn) not in (None, q.id) for fn in q.called):
            c.advise(Advice("overflow_not_helpers",
                            "; the functions this calls pass their own questions, large "
                            "inputs included, so an overflow there is not the cause (a row "
                            "whose every score is -inf also gives 0/0 = NaN)"))


def grade_functions(assignment: Assignment, path: str, env_for_question: Callable[[str], dict],
                    *, include_hidden: bool, mode: Mode, questions: list[str] | None = None,
                    sandbox: str | None = None, error: str | None = None,
                    recording: Recording | None = None, stand_ins: Callable | None = None,
                    source: str | None = None) -> SubmissionResult:
    """Run every question's cases on one submission's names, in `mode` (GRADE: stand-ins for
    the sandboxed worker; CHECK: the student's own functions; RECORD: the reference, its
    public outcomes stored in `recording`), then name mistakes and add the notes.
    `stand_ins`: how diagnosis may run a student's function again with correct helpers in
    place of theirs (`diagnose.stand_ins`), or None; `source`: the student's source, which
    diagnosis reads for the constructs some mistakes are made with."""
    start = time.monotonic()
    results = {}
    diagnosis = diagnose.Session(assignment)
    diagnosis.public_only = not include_hidden
    diagnosis.stand_ins = stand_ins
    diagnosis.source = source
    context = CheckContext(mode, session=diagnosis, recording=recording)
    for q in assignment.questions:
        if questions and q.id not in questions:
            continue
        results[q.id] = run_question(assignment, q.id, env_for_question(q.id),
                                     include_hidden=include_hidden, context=context)
    # After the last call to the student's code: naming known mistakes costs the student no time.
    diagnosis.apply(results)
    add_dependency_notes(assignment, results)
    add_refusal_notes(results)
    return SubmissionResult(path, results, error=error, sandbox=sandbox,
                            seconds=time.monotonic() - start)


def failed_everywhere(assignment: Assignment, path: str, status: CaseStatus, message: str, *,
                      include_hidden: bool, sandbox: str | None = None) -> SubmissionResult:
    """A row for a submission none of whose code could run (syntax error, crash at import...)."""
    results = {}
    for q in assignment.questions:
        test_file = load_question_file(str(q.test_file))
        cases = [CaseResult(tc.name, float(tc.points or 0), bool(tc.hidden), CaseStatus(status),
                            message=message, kind=str(status))
                 for tc in test_file.test_cases if include_hidden or not tc.hidden]
        results[q.id] = QuestionResult(q.id, cases)
    return SubmissionResult(path, results, error=message, sandbox=sandbox)


def malformed_reply(assignment: Assignment, path: str, detail: str, *, include_hidden: bool,
                    sandbox: str | None = None) -> SubmissionResult:
    """The row of a submission whose grading process sent a reply no honest one sends: every
    case errors, and the row says the submission is flagged for review."""
    from ..sandbox.session import MALFORMED   # not at the top: `check` never needs the sandbox

    message = f"{MALFORMED} ({detail}); grading stopped there and this submission is " \
              "flagged for review"
    row = failed_everywhere(assignment, path, CaseStatus.ERROR, message, include_hidden=include_hidden,
                            sandbox=sandbox)
    row.notes.append(f"flagged for review: {MALFORMED} ({detail})")
    return row


def internal_error(assignment: Assignment, path: str, error: BaseException, *,
                   include_hidden: bool, sandbox: str | None = None) -> SubmissionResult:
    """The row of a submission the grader itself failed on (a bug of the grader, not the
    student's doing): every case says so; the instructor should look."""
    what = f"{type(error).__name__}: {str(error)[:200]}"
    message = f"the grader failed on this submission ({what}); this is not a verdict on " \
              "your work: the instructor should look at it"
    try:
        return failed_everywhere(assignment, path, CaseStatus.INTERNAL_ERROR, message,
                                 include_hidden=include_hidden, sandbox=sandbox)
    except Exception:  # noqa: BLE001 - even the question files fail: one row without questions
        return SubmissionResult(path, {}, error=message, sandbox=sandbox)
