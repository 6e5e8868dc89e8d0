"""Grading one mutant of the reference (`mutations.Mutant`) as a student's submission, for
`autograder mutants`: every case, public and hidden, as `autograder grade` judges them (the same
comparisons, the same naming of known mistakes), but in this process, as `autograder lint`
grades the reference itself; `forked_tasks` runs each mutant in a worker of its own with a
deadline.

A mutant that passes every case is then run beside the reference on fresh random inputs shaped
like the cases' (`Baseline.probes`): if it agrees everywhere it is taken to compute the same
thing (an equivalent mutant), else no case catches a mistake that a new input would show.
"""
from __future__ import annotations

import time
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..model.assignment import Assignment
from ..diagnose import CheckRecord, Session
from ..diagnose.symptoms import distance
from ..checking.expected import quietly
from ..checking.inputs import upstream_for
from ..sandbox.execute import run_call
from ..sandbox.protocol import roundtrip_outcome
from ..model.status import CaseStatus
from .mutations import Mutant

# Fresh inputs per probe, as (centred, spread): two drawn like the case's own values (each
# array's mean and spread), one centred on 0 and four times wider, so that signs change and
# large values appear (a case of positive inputs hides a dropped ReLU; overflows need size).
DRAWS = ((False, 1.0), (False, 1.0), (True, 4.0))


class ReferenceFails(ValueError):
    """The reference itself does not pass every case: mutants would be judged against that."""


@dataclass
class Baseline:
    """What every mutant is judged against, computed once before the workers fork: the
    reference's checks on every case, and which cases there are."""

    assignment: Assignment
    probes: list[CheckRecord]               # one check per function and input layout
    calls: dict[str, frozenset[str]]        # function -> the functions it reaches
    public_cases: int
    hidden_cases: int


def _layout(value: Any) -> Any:
    """The shapes and dtypes of a check's inputs (values left out), to keep one probe each."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return (type(value).__name__, tuple(value.shape), str(value.dtype))
    if isinstance(value, (tuple, list)):
        return tuple(_layout(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _layout(v)) for k, v in value.items()))
    return repr(value)


def reference_baseline(assignment: Assignment) -> Baseline:
    """Grade the reference on every case (warming the caches of expected outcomes that the
    workers inherit) and keep its checks; ReferenceFails if it does not pass them all."""
    from ..checking.context import CheckContext, Mode
    from ..grading.grade import student_env
    from ..grading.questions import run_question

    ref = assignment.load_reference()
    env = student_env(assignment, ref)
    session = Session(assignment)
    # The reference run as a student's check is: in this process, its checks kept by `session`.
    context = CheckContext(Mode.CHECK, session=session)
    failing, public, hidden = [], 0, 0
    with quietly():
        for q in assignment.questions:
            result = run_question(assignment, q.id, env, include_hidden=True, context=context)
            for c in result.cases:
                public += not c.hidden
                hidden += bool(c.hidden)
                if CaseStatus(c.status) != CaseStatus.PASSED:
                    failing.append(f"{q.id}: {c.name!r} ({c.status}: {c.message[:200]})")
    if failing:
        raise ReferenceFails("the reference does not pass every case, so mutants cannot be "
                             "judged against them: " + "; ".join(failing[:3])
                             + " (run `autograder lint`, or `autograder snapshot`)")
    probes, seen = [], set()
    for records in session.passed.values():
        for r in records:
            key = (r.function, _layout((r.args, r.kwargs)), r.want_grad)
            if key not in seen:
                seen.add(key)
                probes.append(r)
    from ..diagnose.sources import reference_code

    calls = reference_code(str(assignment.reference_path))[1]
    return Baseline(assignment, probes, calls, public, hidden)


def _mutant_module(baseline: Baseline, mutant: Mutant) -> types.ModuleType:
    path = str(baseline.assignment.reference_path)
    module = types.ModuleType(f"_mutant_{mutant.function}")
    module.__file__ = path
    exec(compile(mutant.module, path, "exec"), module.__dict__)
    return module


def grade_mutant(baseline: Baseline, mutant: Mutant) -> dict:
    """The mutant graded on every case: its failing cases (with the mistakes the catalogue
    names on them) and, when it fails none, how it differs from the reference on fresh inputs
    (None: nowhere)."""
    from ..grading.grade import student_env
    from ..checking.context import Mode
    from ..grading.runner import grade_functions

    start = time.monotonic()
    try:
        module = _mutant_module(baseline, mutant)
    except Exception as e:  # noqa: BLE001 - a mutant may not even load: every case fails
        return {"status": "import_error", "detail": f"{type(e).__name__}: {e}"[:300],
                "failing": [], "named": []}
    env = student_env(baseline.assignment, module)
    result = grade_functions(baseline.assignment, mutant.id, lambda q: env,
                             include_hidden=True, mode=Mode.CHECK)
    failing = []
    for q in result.questions.values():
        for c in q.cases:
            if CaseStatus(c.status) != CaseStatus.PASSED:
                failing.append({"question": q.id, "case": c.name, "hidden": c.hidden,
                                "status": str(c.status), "kind": c.kind,
                                "diagnosis": list(c.diagnosis or [])})
    named = sorted({m for c in failing for m in c["diagnosis"]})
    out = {"status": "graded", "failing": failing, "named": named,
           "graded_seconds": round(time.monotonic() - start, 3)}
    if not failing:
        out["differs"] = probe(baseline, module, mutant)
    return out


def _redraw(value: Any, rng: np.random.Generator, draw: tuple[bool, float]) -> Any:
    """Floating-point arrays drawn afresh with each array's own mean and spread; everything
    else (masks, sizes, options) kept, so the inputs stay valid for the function."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.from_numpy(_fresh(value.detach().double().numpy(), rng, draw)) \
            .to(value.dtype)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        return _fresh(value.astype(np.float64), rng, draw).astype(value.dtype)
    if isinstance(value, tuple):
        return tuple(_redraw(v, rng, draw) for v in value)
    if isinstance(value, list):
        return [_redraw(v, rng, draw) for v in value]
    if isinstance(value, dict):
        return {k: _redraw(v, rng, draw) for k, v in value.items()}
    return value


def _fresh(x: np.ndarray, rng: np.random.Generator, draw: tuple[bool, float]) -> np.ndarray:
    centred, spread = draw
    finite = x[np.isfinite(x)]
    mean = float(finite.mean()) if finite.size else 0.0
    std = float(finite.std()) if finite.size > 1 else 0.0
    std = std or abs(mean) or 1.0
    if centred:
        return spread * (abs(mean) + std) * rng.standard_normal(x.shape)
    return mean + spread * std * rng.standard_normal(x.shape)


def _shapes(value: Any) -> str:
    """The arrays of a check's inputs, as `(2, 3, 4) float64` items."""
    from ..sandbox.execute import iter_arrays

    items = [f"{tuple(a.shape)} {str(a.dtype).replace('torch.', '')}"
             for _, a in iter_arrays(value)]
    return ", ".join(items[:6]) + (", ..." if len(items) > 6 else "")


def _outcome(fn, args: tuple, kwargs: dict, upstream: Any, want_grad: bool) -> dict:
    with quietly():
        return roundtrip_outcome(run_call(fn, args, kwargs, upstream=upstream,
                                          want_grad=want_grad))


def _difference(expected: dict, got: dict, tolerance: dict | None) -> str:
    if got.get("status") != "ok":
        err = got.get("error") or {}
        return f"it raises {err.get('type')}: {str(err.get('message'))[:120]}"
    if sorted(got.get("mutated") or []) != sorted(expected.get("mutated") or []):
        return "it changes an input in place"
    if distance(expected, got, tolerance, grads=False) > 1.0:
        return "its output differs"
    return "its gradients differ"


def probe(baseline: Baseline, module: types.ModuleType, mutant: Mutant) -> dict | None:
    """Where the mutant and the reference part on fresh inputs shaped like the cases' (the
    first such input), or None when they agree on all of them."""
    reference = baseline.assignment.load_reference()
    for n, record in enumerate(baseline.probes):
        if mutant.function not in baseline.calls.get(record.function, {record.function}):
            continue
        for d, draw in enumerate(DRAWS):
            rng = np.random.default_rng([n, d])
            args, kwargs = _redraw((tuple(record.args), dict(record.kwargs)), rng, draw)
            ref_fn = getattr(reference, record.function)
            first = _outcome(ref_fn, args, kwargs, None, False)
            if first["status"] != "ok":
                continue    # an input the reference itself refuses says nothing
            upstream = upstream_for(first["output"], n * 10 + d) if record.want_grad else None
            expected = _outcome(ref_fn, args, kwargs, upstream, record.want_grad)
            got = _outcome(getattr(module, record.function), args, kwargs, upstream,
                           record.want_grad)
            if distance(expected, got, record.tolerance) > 1.0:
                return {"question": record.question, "function": record.function,
                        "inputs": _shapes((record.args, record.kwargs)),
                        "how": _difference(expected, got, record.tolerance),
                        "draw": "centred on 0, wider" if draw[0] else "like the case's"}
    return None
