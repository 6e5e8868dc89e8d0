"""Expected outcomes, for `Question.check`: the live hidden reference's outcome (hidden cases;
cached per process, since every submission gets the same inputs) or the one a snapshot recorded
from it (public cases, which ship to students without the reference). `recording` is the mode
of `autograder snapshot`, in which public cases store the reference's outcome instead.
"""
from __future__ import annotations

import contextlib
import json
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..model.assignment import Assignment, AssignmentError
from ..memo.fingerprint import call_digest
from .inputs import upstream_for
from ..sandbox.execute import run_call
from ..sandbox.protocol import roundtrip_outcome
from ..sandbox.wire import decode, encode

# Set by the grader around a run; otter's tools leave the defaults.
_state = threading.local()


def _ctx() -> dict:
    if not hasattr(_state, "ctx"):
        _state.ctx = {"record": None, "use_reference": True}
    return _state.ctx


class recording:
    """Context manager for `autograder snapshot`: public cases store the reference's outcome."""

    def __init__(self, store: dict, tolerances: dict | None = None):
        self.store = store
        self.tolerances = {} if tolerances is None else tolerances   # per question

    def __enter__(self):
        _ctx()["record"] = self.store
        _ctx()["tolerances"] = self.tolerances
        return self.store

    def __exit__(self, *exc):
        _ctx()["record"] = None
        _ctx().pop("tolerances", None)


class GraderError(Exception):
    """A problem of the grader or the assignment, never the student's fault."""


class snapshot:
    """Expected values recorded from the reference into `snapshots/<question>.json`."""

    def __init__(self, key: str):
        self.key = key


_reference_cache: dict[tuple, dict] = {}
_cache_lock = threading.Lock()


def _reference_outcome(assignment: Assignment, fn_name: str, args, kwargs, seed: int,
                       want_grad: bool) -> dict:
    """The reference's outcome; cached, since every submission gets the same inputs."""
    key = (str(assignment.root), call_digest(fn_name, seed, want_grad, args, kwargs))
    with _cache_lock:
        cached = _reference_cache.get(key)
    if cached is None:
        cached = _compute_reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad)
        with _cache_lock:
            _reference_cache[key] = cached
    return cached


@contextlib.contextmanager
def quietly():
    """Run reference code (or a variant made from it) without printing its warnings: Python
    prints a warning with the file's path and the source line, and no output of the engine may
    quote the reference (NumPy's "invalid value encountered" on a row masked in full is the
    reference working as meant)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            yield


def _compute_reference_outcome(assignment: Assignment, fn_name: str, args, kwargs, seed: int,
                               want_grad: bool) -> dict:
    try:
        ref = getattr(assignment.load_reference(), fn_name)
    except (AssignmentError, AttributeError) as e:
        raise GraderError(f"reference for {fn_name} unavailable: {e}") from e
    with quietly():
        first = run_call(ref, args, kwargs)
    if first["status"] != "ok":
        raise GraderError(f"the reference {fn_name} failed: {first['error']}")
    upstream = upstream_for(first["output"], seed) if want_grad else None
    with quietly():
        full = run_call(ref, args, kwargs, upstream=upstream, want_grad=want_grad)
    out = roundtrip_outcome(full)
    out["upstream"] = upstream
    return out


def _snapshot_path(assignment: Assignment, question: str) -> Path:
    return assignment.snapshot_dir / f"{question}.json"


_snapshot_cache: dict[str, dict] = {}


def _load_snapshot(path: Path) -> dict:
    key = str(path)
    if key not in _snapshot_cache:
        if not path.is_file():
            raise GraderError(f"snapshot file {path.name} is missing: run `autograder snapshot`")
        _snapshot_cache[key] = json.loads(path.read_text())
    return _snapshot_cache[key]


def _same_inputs(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True)))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b)))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_inputs(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_inputs(a[k], b[k]) for k in a)
    return a == b


def _snapshot_outcome(assignment: Assignment, question: str, key: str, fn_name: str, args,
                      kwargs, seed: int, want_grad: bool, tolerance: dict | None = None) -> dict:
    store = _ctx()["record"]
    if store is not None:
        # The question's tolerance table: `autograder snapshot` rounds to well inside it.
        _ctx().setdefault("tolerances", {}).setdefault(question, dict(tolerance or {}))
        exp = _reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad)
        store.setdefault(question, {})[key] = {
            "function": fn_name,
            "inputs": encode((tuple(args), dict(kwargs)), None),
            "upstream": encode(exp["upstream"], None),
            "output": encode(exp["output"], None),
            "grads": None if exp["grads"] is None else
            {k: encode(v, None) for k, v in exp["grads"].items()},
        }
        return exp
    path = _snapshot_path(assignment, question)
    digest = call_digest(fn_name, seed, want_grad, args, kwargs)
    with _cache_lock:
        hit = _decoded_snapshots.get((str(path), key))
    if hit is not None and hit[0] == digest:
        return hit[1]
    data = _load_snapshot(path).get(key)
    if data is None:
        raise GraderError(f"snapshot {question}/{key} is missing: run `autograder snapshot`")
    if data["function"] != fn_name or not _same_inputs(
            decode(data["inputs"], None), (tuple(args), dict(kwargs))):
        raise GraderError(f"snapshot {question}/{key} is stale: run `autograder snapshot`")
    grads = data.get("grads")
    outcome = {
        "status": "ok", "output": decode(data["output"], None),
        "upstream": decode(data["upstream"], None),
        "grads": None if grads is None else {k: decode(v, None) for k, v in grads.items()},
        "grad_error": None, "mutated": [], "forbidden": [], "called": [], "error": None,
    }
    with _cache_lock:
        _decoded_snapshots[(str(path), key)] = (digest, outcome)
    return outcome


# Decoded snapshot entries, with the digest of the inputs they were checked against.
_decoded_snapshots: dict[tuple[str, str], tuple[bytes, dict]] = {}
