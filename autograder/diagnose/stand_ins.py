"""A question that fails inside a helper the student wrote for another question (a block whose
cases all crash in their multi-head attention) hides its own mistakes: its cases never get as
far as the block's own choices. This grades such a case again with the student's failing
helpers replaced by correct ones, and names what is left (`Session.apply`):

* the student's function runs again in the sandbox, through one function added to their module
  (`SOURCE`): it calls the student's function with stand-ins in place of the failing helpers.
  A stand-in records what it was given and returns the next of the results it was handed; when
  it has none, the call stops there. The submission's own worker runs it once grading is over
  (the worker adds the function itself), else a worker of the diagnosis's own that imports a
  copy of the file with the function appended;
* the trusted process computes those results with the *reference's* helper (`VariantSource.
  helper_outcome`), as the cause search runs the reference's variants there, and the call runs
  again with them, until it no longer asks for more (at most `MAX_CALLS` helper calls);
* the outcome is judged as any failing check is (`find_matches`, the search for several
  causes, the fallback rules), without gradients: the stand-ins' results carry none.

The reference's code never enters the student's process, only its results on the inputs the
student's own code passed to the helper. The re-runs are the diagnosis's own: they start after
the submission's last graded call, in a session of their own (the grading session hands its
worker over), so nothing they do reaches the grade (their time, refusals or replies), and a
stand-in run that cannot finish names nothing. Only cases that raised inside a function of
another question that fails are run again, once each, after the submission's last graded call.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Protocol

import torch
import numpy as np

from ..memo.fingerprint import call_digest
from ..sandbox.execute import iter_arrays
from ..sandbox.stand_in_entry import ENTRY, SOURCE, entry_cell
from .sources import OutcomeUnknown

MAX_CALLS = 4           # helper calls one re-run may make (a block calls its attention once)
# What the inputs a student's function passes to a helper may weigh, against the case's own
# inputs: the reference runs on them in the trusted process.
INPUT_FACTOR = 4
INPUT_FLOOR = 2**20


class Runs(Protocol):
    """Runs the student's `function` on these inputs, with `replaced` standing in; returns the
    outcome of the call of `ENTRY` (status, and as output the entry's (status, output, calls))."""

    def __call__(self, function: str, args: tuple, kwargs: dict, replaced: list[str],
                 results: list) -> dict: ...


def _bytes(value: Any) -> int:
    return sum(a.nbytes if isinstance(a, np.ndarray) else a.numel() * a.element_size()
               for _, a in iter_arrays(value))


def _calls(value: Any, replaced: list[str]) -> list[tuple[str, tuple, dict]] | None:
    """The stand-ins' record, validated (it comes from the student's process)."""
    if not isinstance(value, (list, tuple)) or len(value) > MAX_CALLS + 1:
        return None
    out = []
    for item in value:
        if not (isinstance(item, (list, tuple)) and len(item) == 3 and item[0] in replaced
                and isinstance(item[1], (list, tuple)) and isinstance(item[2], dict)
                and all(isinstance(k, str) for k in item[2])):
            return None
        out.append((item[0], tuple(item[1]), dict(item[2])))
    return out


def run_with_correct_helpers(runs: Runs, helper: Callable[[str, tuple, dict], dict],
                             record: Any, replaced: list[str]) -> dict | None:
    """The outcome of the student's function on the record's inputs with `replaced` computed
    correctly (by `helper`), without gradients; None when it cannot be had (the student's code
    is not deterministic, asks for too much, or the helper fails on what it was given)."""
    results: list = []
    digests: list[bytes] = []
    limit = max(INPUT_FACTOR * _bytes((record.args, record.kwargs)), INPUT_FLOOR)
    for _ in range(MAX_CALLS + 1):
        outcome = runs(record.function, record.args, record.kwargs, replaced, results)
        if outcome.get("status") != "ok":
            # The student's own code raised, past (or before) the stand-ins: that is the
            # outcome, with the student's line.
            return {**outcome, "grads": None, "grad_error": None}
        output = outcome.get("output")
        if not (isinstance(output, tuple) and len(output) == 3
                and output[0] in ("ok", "pending")):
            return None
        status, value, calls = output
        calls = _calls(calls, replaced)
        if calls is None:
            return None
        seen = [call_digest(n, 0, False, a, k) for n, a, k in calls]
        if seen[:len(digests)] != digests:
            return None     # not the same calls as last time: nothing to replay
        if len(calls) <= len(results) and status == "ok":
            return {**outcome, "output": value, "grads": None, "grad_error": None,
                    "called": []}
        if len(calls) > MAX_CALLS:
            return None
        for (name, a, k), digest in zip(calls[len(results):], seen[len(results):]):
            if _bytes((a, k)) > limit:
                return None
            done = helper(name, a, k)
            if done.get("status") != "ok":
                return None
            results.append(done.get("output"))
            digests.append(digest)
    return None


def rerun_record(record: Any, outcome: dict) -> Any:
    """A copy of a failing check whose student outcome is the re-run's: compared without
    gradients, under the same key (the variants' outcomes on these inputs are shared)."""
    expected = {**record.expected, "grads": None, "grad_error": None}
    return dataclasses.replace(record, got=outcome, expected=expected, want_grad=False,
                               _key=record.key, _far=None)


def helpers_to_replace(assignment: Any, record: Any, failing: set[str]
                       ) -> tuple[list[str], list[str]]:
    """(the functions to replace, those of them the check called) when the check raised
    inside a function of another question and called a function of another question that
    fails (`failing`: question ids): every function of every such question, also those the
    crash came before (a split that fails calls for its merge too). Empty otherwise."""
    got = record.got
    if got.get("status") != "error":
        return [], []
    where = (got.get("error") or {}).get("function")
    mine = assignment.question_of(record.function)
    if not where or assignment.question_of(where) in (None, mine):
        return [], []
    called = [fn for fn in got.get("called") or []
              if assignment.question_of(fn) not in (None, mine)
              and assignment.question_of(fn) in failing]
    questions = {assignment.question_of(fn) for fn in called}
    replaced = [fn for q in assignment.questions if q.id in questions for fn in q.functions]
    return replaced, called


def reference_helper(source: Any) -> Callable[[str, tuple, dict], dict]:
    """The reference's helper results from a variant source, or OutcomeUnknown (the shipped
    table holds no reference)."""
    compute = getattr(source, "helper_outcome", None)
    if compute is None:
        raise OutcomeUnknown("no reference here to stand in for a helper")
    return compute


def as_plain(value: Any) -> Any:
    """Tensors the trusted side hands a worker: detached, on the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, tuple):
        return tuple(as_plain(v) for v in value)
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    return value


class WorkerStandIns:
    """`Runs` in the sandbox, for the instructor's grade, in a session of the diagnosis's own
    opened on first use (grading is over by then): it takes over the grading session's live
    worker (`grading`), which adds `SOURCE` to the module it graded, or else starts a worker
    importing a copy of the student's file with `SOURCE` appended (as a last cell of a
    notebook). Each call runs in a worker armed as its function's question is (`forbidden`).
    Its time limits are its own: one question's time for all its calls together, so a re-run
    that hangs costs a submission that much at most. Taking the worker over spares a worker's
    start and the file's import (47 of the class of 120's 175 workers)."""

    def __init__(self, sandbox: Any, source: str, filename: str, module: str, api: list[str],
                 limits: Any, forbidden: Callable[[str], list[str]],
                 cells: list[tuple[int, str]] | None = None,
                 schedule: list[tuple[str, tuple[str, ...]]] | None = None,
                 memo: Any = None, grading: Any = None):
        limits = dataclasses.replace(limits, submission_seconds=min(
            limits.submission_seconds, limits.question_seconds))
        self._make = dict(sandbox=sandbox, source=source + SOURCE, filename=filename,
                          module=module, api=list(api), limits=limits, schedule=schedule,
                          memo=memo)
        if cells is not None:
            self._make["cells"] = list(cells) + [(entry_cell(cells), SOURCE)]
        self._forbidden = forbidden
        self._grading = grading
        self._session = None
        self._broken = False

    def __call__(self, function: str, args: tuple, kwargs: dict, replaced: list[str],
                 results: list) -> dict:
        from ..sandbox.session import MalformedReply, WorkerStopped

        if self._broken:
            raise OutcomeUnknown("the stand-ins' worker stopped")
        try:
            if self._session is None:
                self._session = self._open()
            self._session.begin_question()
            return self._session.call(ENTRY, (function, list(replaced), as_plain(results),
                                              *args), kwargs, upstream=None, want_grad=False,
                                      forbidden=list(self._forbidden(function)))
        except (WorkerStopped, MalformedReply) as e:
            # Whatever stopped it (a time limit, a refusal, a malformed reply) is the
            # diagnosis's business only: this case, and the next, get no name from it.
            self._broken = True
            raise OutcomeUnknown(f"the stand-ins' worker stopped: {e}") from None

    def _open(self) -> Any:
        from ..sandbox.session import MalformedReply, WorkerSession, WorkerStopped

        session = WorkerSession(**self._make)
        grading, self._grading = self._grading, None
        if grading is not None and grading.hand_over(session):
            try:
                session.add_entry()
                return session
            except (WorkerStopped, MalformedReply):
                # The worker could not add it (the student's code may have changed it): a
                # worker of the diagnosis's own, as if there had been none to take over.
                session.close()
                session = WorkerSession(**self._make)
        loaded = session.start()
        if not loaded.ok:
            raise WorkerStopped("error", "the copy did not import")
        return session

    def close(self) -> None:
        self._grading = None
        if self._session is not None:
            self._session.close()
            self._session = None


def _helpers_said(assignment: Any, catalogue: Any, replaced: list[str],
                  named: dict[str, set[str]]) -> str:
    """"your `f`, which fails question 'q' (likely mistake there: ...)", per question."""
    order = {mid: n for n, mid in enumerate(catalogue.mistakes)}
    by_question: dict[str, list[str]] = {}
    for fn in replaced:
        by_question.setdefault(assignment.question_of(fn), []).append(fn)
    parts = []
    for qid, fns in by_question.items():
        ids = sorted(set().union(*(named.get(f, set()) for f in fns)),
                     key=lambda i: order.get(i, 0))
        names = "; ".join(catalogue.mistakes[i].name for i in ids if i in catalogue.mistakes)
        listed = " and ".join(f"`{f}`" for f in fns)
        verb = "fails" if len(fns) == 1 else "fail"
        parts.append(f"your {listed}, which {verb} question '{qid}'"
                     + (f" (likely mistake there: {names})" if names else ""))
    return "; and ".join(parts)


def name_past_helpers(runner: Any, session: Any, questions: dict,
                      named: dict[str, set[str]]) -> int:
    """For each failing case of `session` that raised inside a function of another question
    that fails: grade it again with the failing helpers it called replaced by correct ones, and
    add to its hint what that shows (it passes, or its own mistake, named where the evidence
    is unambiguous); the mistakes named are added to its diagnosis. Returns how many cases
    were run again."""
    from .fallback import decide
    from .variants import find_matches

    if session.stand_ins is None:
        return 0
    assignment = session.assignment
    failing = {qid for qid, q in questions.items() if str(q.status) != "passed"}
    todo = [(r, c, *helpers_to_replace(assignment, r, failing)) for r, c in session.failed]
    todo = [t for t in todo if t[2]]
    if not todo:
        return 0
    helper = reference_helper(runner.source)
    reruns: dict[str, list] = {}
    done = []
    for record, case, replaced, called in todo:
        try:
            outcome = run_with_correct_helpers(session.stand_ins, helper, record, replaced)
        except OutcomeUnknown:
            break       # the worker stopped: no more re-runs for this submission
        if outcome is None:
            continue
        rerun = rerun_record(record, outcome)
        reruns.setdefault(record.function, []).append(rerun)
        done.append((rerun, case, called))
    catalogue = runner.catalogue
    for rerun, case, called in done:
        helpers = _helpers_said(assignment, catalogue, called, named)
        one = len(called) == 1
        with_them = f"With {'a correct one' if one else 'correct ones'} in " \
                    f"{'its' if one else 'their'} place, your `{rerun.function}`"
        ids: list[str] = []
        if rerun.far <= 1.0:
            said = f"{with_them} passes this case: fix {'it' if one else 'them'} first."
        else:
            others = list(session.passed.get(rerun.function, [])) + reruns[rerun.function]
            try:
                found = find_matches(runner, rerun, session.passed,
                                     session.failed_by_function, session.code(rerun.function))
                own = decide(runner, rerun, found, session.passed, others, [], {})
            except OutcomeUnknown:
                own = None
            if own is not None:
                ids = list(own.ids)
                said = f"{with_them} still fails this case: {own.text}"
            else:
                said = f"{with_them} still fails this case: it has a mistake of its own too."
        text = f"This case calls {helpers}. {said}"
        case.hint = f"{case.hint} {text}" if case.hint else text
        if ids:
            case.diagnosis = list(dict.fromkeys(list(case.diagnosis or []) + ids))
    return len(done)
