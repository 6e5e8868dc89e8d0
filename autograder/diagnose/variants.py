"""The variant engine: runs each known mistake's variant (the hidden reference with some
functions replaced by the mistaken ones) on the inputs of a failing check, and decides which
mistakes explain the student's outcome (`find_matches`). Variants' modules and outcomes are
cached per grading process, across submissions, since every submission gets the same inputs."""
from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np
import torch

from ..checking.checks import finite_float64, tolerance_for
from ..checking.record import CheckRecord as CheckedCall
from .catalogue import Catalogue, Mistake
from .constructs import has_construct
from .sources import OutcomeUnknown, VariantSource
from .symptoms import CLOSER, INF, Evidence, Predicate, distance, explains

# Guards the variant caches below, shared by the threads of one grading process.
_lock = threading.Lock()


@dataclass
class CheckRecord(CheckedCall):
    """One `Question.check` call (`checking.record.CheckRecord`) as diagnosis reads it: with the
    reference's distance to the student's outcome and the evidence rules look at."""

    _far: float | None = None

    @classmethod
    def of(cls, record: CheckedCall) -> "CheckRecord":
        """The record a check kept, for diagnosis (the same record if it already is one)."""
        if isinstance(record, cls):
            return record
        return cls(**{f.name: getattr(record, f.name) for f in fields(CheckedCall)})

    @property
    def far(self) -> float:
        """The reference's distance to the student's outcome, in tolerances."""
        if self._far is None:
            self._far = distance(self.expected, self.got, self.tolerance)
        return self._far

    def evidence(self) -> Evidence:
        return Evidence(self.question, self.function, self.args, self.kwargs, self.expected,
                        self.got, self.large_inputs, self.tolerance)


class VariantRunner:
    """Decides which variants explain a check, with their outcomes from a `VariantSource`
    (the reference run, or the table the student bundle ships: `sources`), caching outcomes
    across submissions."""

    _outcomes: dict[tuple, dict] = {}
    errors: dict[tuple[str, str], str] = {}     # (mistake, function) -> an error a variant raised

    def __init__(self, catalogue: Catalogue, source: "VariantSource"):
        self.catalogue = catalogue
        self.source = source
        self.calls = source.calls

    def affects(self, alternative: dict[str, Callable], function: str) -> bool:
        return bool(set(alternative) & self.calls.get(function, {function}))

    def outcome(self, mistake: Mistake, index: int, record: CheckRecord,
                grads: bool = True) -> dict | None:
        """The variant's outcome on the record's inputs (with gradients if the check asked
        for them and `grads`); computed once per grading process."""
        grads = grads and record.want_grad
        key = (self.source.key, id(self.catalogue), mistake.id, index, record.key, grads)
        with _lock:
            cached = self._outcomes.get(key)
        if cached is None:
            cached = self.source.compute(mistake, index, record, grads)
            if cached is None:
                return None
            if cached["status"] != "ok":
                err = cached.get("error") or {}
                self.errors[(mistake.id, record.function)] = \
                    f"{err.get('type')}: {err.get('message')}"
            with _lock:
                cached = self._outcomes.setdefault(key, cached)
        return cached

    def explains(self, mistake: Mistake, index: int, record: CheckRecord,
                 output_explains: bool | None = None) -> bool:
        """Does the variant account for the student's outcome of this check? Its gradients
        (a backward pass, most of a variant's cost) are computed only for a variant whose
        output already does. `output_explains`: that first stage, if already judged."""
        if output_explains is False:
            return False
        out = self.outcome(mistake, index, record, grads=False)
        if out is None:
            return False
        if output_explains:
            if not record.want_grad:
                return True
            out = self.outcome(mistake, index, record)
            return out is not None and explains(out, record.got, record.expected,
                                                record.tolerance, record.far)
        # Without gradients, inputs do not require grad: an in-place change that fails with
        # them succeeds without. A different status says nothing yet; the full run decides.
        if not (record.want_grad and out["status"] != record.got.get("status")):
            if not explains(out, record.got, record.expected, record.tolerance, record.far,
                            grads=False):
                return False
            if not record.want_grad:
                return True
        out = self.outcome(mistake, index, record)
        return out is not None and explains(out, record.got, record.expected, record.tolerance,
                                            record.far)

    def outputs_explain(self, candidates: list[tuple[Mistake, int]],
                        record: CheckRecord) -> dict[tuple[str, int], bool | None]:
        """The first stage of `explains` for many variants at once: {(mistake id, index):
        whether the variant's output explains the student's}, for the variants whose outputs
        are plain finite tensors shaped like the student's; the others are left to `explains`.

        The variants' outputs on one check are stacked once per grading process, so a
        submission costs one array operation per returned tensor instead of one comparison per
        variant (most candidates are far off: each is a different mistake)."""
        got = record.got
        leaves = _finite_leaves(got.get("output"))
        if got.get("status") != "ok" or leaves is None or not leaves:
            return {}
        far = record.far
        limit = max(1.0, CLOSER * far) if far < INF else 1.0
        stacked = self._stacked(candidates, record, [(p, t.shape, t.dtype) for p, t in leaves])
        if stacked is None:
            return {}
        ids, stacks = stacked
        worst = np.zeros(len(ids))
        for (path, student), (values, weights) in zip(leaves, stacks):
            x = finite_float64(student)
            worst = np.maximum(worst, (np.abs(values - x.reshape(-1)) / weights).max(axis=1))
        return {key: bool(d <= limit) for key, d in zip(ids, worst)}

    _stacks: dict[tuple, Any] = {}

    def _stacked(self, candidates, record: CheckRecord, layout: list) -> tuple | None:
        """(variant keys, [(values V x n, tolerances V x n) per returned tensor]) for the
        candidates whose forward outcome is ok, unchanged inputs as the student's, no forbidden
        call, and outputs of this layout, all finite. Cached per check and layout."""
        got = record.got
        key = (self.source.key, record.key,
               tuple((p, tuple(shape), str(dtype)) for p, shape, dtype in layout),
               tuple((m.id, i) for m, i in candidates), tuple(sorted(got.get("mutated") or [])),
               bool(got.get("forbidden")))
        with _lock:
            hit = self._stacks.get(key)
        if hit is not None:
            return hit if hit != () else None
        ids, columns = [], [[] for _ in layout]
        for m, i in candidates:
            out = self.outcome(m, i, record, grads=False)
            if out is None or out.get("status") != "ok" \
                    or sorted(out.get("mutated") or []) != sorted(got.get("mutated") or []) \
                    or bool(out.get("forbidden")) != bool(got.get("forbidden")):
                continue
            mine = _finite_leaves(out.get("output"))
            if mine is None or [(p, t.shape, t.dtype) for p, t in mine] != layout:
                continue
            ids.append((m.id, i))
            for column, (_, t) in zip(columns, mine):
                column.append(t)
        result: Any = ()
        if ids:
            stacks = []
            for column in columns:
                rtol, atol = tolerance_for(column[0].dtype, record.tolerance)
                if atol <= 0:      # 0/0 where both are 0: the full comparison handles that
                    stacks = None
                    break
                values = np.stack([finite_float64(t).reshape(-1) for t in column])
                stacks.append((values, atol + rtol * np.abs(values)))
            result = (ids, stacks) if stacks is not None else ()
        with _lock:
            self._stacks[key] = result
        return result if result != () else None

    def consistent(self, mistake: Mistake, index: int,
                   passed: dict[str, list[CheckRecord]]) -> bool:
        """The variant agrees with every check the student passed on a function it replaces."""
        return all(self.explains(mistake, index, record)
                   for function in mistake.alternatives[index]
                   for record in passed.get(function, []))


def _finite_leaves(output: Any) -> list[tuple[tuple, torch.Tensor]] | None:
    """The floating-point tensors of an output (a tensor or a tuple/list of them), all finite;
    None for any other output (the full comparison judges those)."""
    items = list(output) if isinstance(output, (tuple, list)) else [output]
    leaves = []
    for i, t in enumerate(items):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0 \
                or finite_float64(t) is None:
            return None
        leaves.append(((i,) if isinstance(output, (tuple, list)) else (), t))
    if isinstance(output, (tuple, list)):
        leaves = [((type(output).__name__,) + p, t) for p, t in leaves]
    return leaves


def _holds(predicate: Predicate, ev: Evidence) -> bool:
    try:
        return bool(predicate(ev))
    except OutcomeUnknown:
        raise
    except Exception:  # noqa: BLE001 - a rule that cannot judge this outcome does not match
        return False


def contradicted(runner: VariantRunner, mistake: Mistake, index: int,
                 failed: dict[str, list[CheckRecord]]) -> bool:
    """For a mistake that `leaves_others_right`: some failing check of a function its variant
    replaces is one the variant computes right (within the tolerances), so the student's
    function fails where that mistake would not."""
    if not mistake.leaves_others_right:
        return False
    for function in mistake.alternatives[index]:
        for r in failed.get(function, []):
            out = runner.outcome(mistake, index, r, grads=False)
            if out is not None and r.far > 1.0 and \
                    distance(r.expected, out, r.tolerance, 1.0, grads=False) <= 1.0:
                return True
    return False


def reproduces_exactly(runner: VariantRunner, mistake: Mistake, record: CheckRecord) -> bool:
    """Some alternative of the mistake gives the student's outcome, a call that ran, within
    the tolerances: evidence that nothing but that mistake makes (`constructs`)."""
    if record.got.get("status") != "ok":
        return False
    for i, alt in enumerate(mistake.alternatives):
        if runner.affects(alt, record.function):
            out = runner.outcome(mistake, i, record)
            if out is not None and distance(out, record.got, record.tolerance, 1.0) <= 1.0:
                return True
    return False


def find_matches(runner: VariantRunner, record: CheckRecord,
                 passed: dict[str, list[CheckRecord]] | None = None,
                 failed: dict[str, list[CheckRecord]] | None = None,
                 code: Callable[[], str | None] | None = None) -> list[Mistake]:
    """Every known mistake that explains this failing check (the caller wants exactly one).
    `failed`: the submission's failing checks by function (see `contradicted`); `code`: gives
    the student's code this check runs (`constructs.code_for`; asked only when a mistake tied
    to a construct fits), None when unknown."""
    got = record.got
    if got.get("status") in ("not_implemented", "memory"):
        return []
    if record.far <= 1.0:
        return []       # the reference itself reproduces this outcome: nothing to name
    passed = passed or {}
    ev = record.evidence()
    mistakes = [m for m in runner.catalogue.mistakes.values()
                if not m.fallback and (not m.questions or record.question in m.questions)]
    candidates = [(m, i) for m in mistakes for i, alt in enumerate(m.alternatives)
                  if runner.affects(alt, record.function)]
    first = runner.outputs_explain(candidates, record) if len(candidates) > 1 else {}
    found = []
    for m in mistakes:
        if m.alternatives:
            if not any(runner.affects(alt, record.function)
                       and runner.explains(m, i, record, first.get((m.id, i)))
                       and runner.consistent(m, i, passed)
                       and not contradicted(runner, m, i, failed or {})
                       for i, alt in enumerate(m.alternatives)):
                continue
        elif m.functions is not None and record.function not in m.functions:
            continue
        if m.when is not None and not _holds(m.when, ev):
            continue
        if m.construct and code is not None and not has_construct(m.construct, code()) \
                and not reproduces_exactly(runner, m, record):
            continue    # the code has no such construct, and the evidence could be another's
        found.append(m)
    return found
