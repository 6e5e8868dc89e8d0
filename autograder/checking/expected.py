"""Expected outcomes, for `Question.check`: the live hidden reference's outcome (hidden cases;
cached per process, since every submission gets the same inputs) or the one a snapshot recorded
from it (public cases, which ship to students without the reference). In the RECORD context of
`autograder snapshot` (`checking.context`), public cases store the reference's outcome instead.
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

from ..memo.fingerprint import call_digest
from ..model.assignment import Assignment, AssignmentError
from ..sandbox.execute import Chained, run_call, steps_to_data, with_chained_functions
from ..sandbox.protocol import roundtrip_outcome
from ..sandbox.wire import decode, encode
from .context import CheckContext
from .inputs import upstream_for_part
from .paths import resolve_path

class GraderError(Exception):
    """A problem of the grader or the assignment, never the student's fault."""


class snapshot:
    """Expected values recorded from the reference into `snapshots/<question>.json`."""

    def __init__(self, key: str):
        self.key = key


_reference_cache: dict[tuple, dict] = {}
_cache_lock = threading.Lock()


def digest_name(fn_name: str, part: tuple = ()) -> str:
    """What a call's digest is taken under: the function, and the part of its output a case
    compares (whose upstream gradient alone is drawn), if any."""
    return fn_name if not part else f"{fn_name}@{steps_to_data(part)}"


def reference_outcome(assignment: Assignment, fn_name: str, args, kwargs, seed: int,
                       want_grad: bool, part: tuple = ()) -> dict:
    """The reference's outcome; cached, since every submission gets the same inputs. With
    `part` (a place in the output, `outputs.paths`), the upstream gradient is drawn for that
    place only."""
    key = (str(assignment.root), call_digest(digest_name(fn_name, part), seed, want_grad, args,
                                             kwargs))
    with _cache_lock:
        cached = _reference_cache.get(key)
    if cached is None:
        cached = _compute_reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad,
                                            part)
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
                               want_grad: bool, part: tuple = ()) -> dict:
    try:
        module = assignment.load_reference()
        ref = getattr(module, fn_name)
    except (AssignmentError, AttributeError) as e:
        raise GraderError(f"reference for {fn_name} unavailable: {e}") from e
    # An input the student's own function makes (a chained call) is the reference's here.
    args, kwargs = with_chained_functions(tuple(args), dict(kwargs),
                                          lambda name: getattr(module, name, None))
    with quietly():
        first = run_call(ref, args, kwargs)
    if first["status"] != "ok":
        chained = first.get("chained")
        which = f"{chained['function']} (whose output {fn_name} is given)" if chained \
            else fn_name
        raise GraderError(f"the reference {which} failed: {first['error']}")
    output = roundtrip_outcome(first, fn_name)["output"]     # as data: records as Records
    where = resolve_path(output, part)
    if where is None:
        raise GraderError(f"the case compares part {steps_to_data(part)} of the output of "
                          f"{fn_name}, which the reference's output does not have")
    upstream = upstream_for_part(output, where, seed) if want_grad else None
    with quietly():
        full = run_call(ref, args, kwargs, upstream=upstream, want_grad=want_grad)
    out = roundtrip_outcome(full)
    out["upstream"] = upstream
    return out


def snapshot_path(assignment: Assignment, question: str) -> Path:
    return assignment.snapshot_dir / f"{question}.json"


_snapshot_cache: dict[str, dict] = {}


def load_snapshot(path: Path) -> dict:
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


def _plain_inputs(args, kwargs) -> tuple[tuple, dict]:
    """A case's inputs as a snapshot stores them: an input the student's own function makes
    (`execute.Chained`) as what makes it."""
    def plain(v: Any) -> Any:
        if isinstance(v, Chained):
            return {"output of": v.name, "inputs": (v.args, v.kwargs),
                    "item": steps_to_data(v.pick)}
        return v
    return tuple(plain(a) for a in args), {k: plain(v) for k, v in kwargs.items()}


def snapshot_outcome(assignment: Assignment, question: str, key: str, fn_name: str, args,
                      kwargs, seed: int, want_grad: bool, *, context: CheckContext,
                      tolerance: dict | None = None, part: tuple = ()) -> dict:
    recording = context.recording
    if recording is not None:
        # The case's tolerance table: `autograder snapshot` rounds to well inside the tightest.
        tables = recording.tolerances
        old = tables.setdefault(question, dict(tolerance or {}))
        for name, (rtol, atol) in (tolerance or {}).items():
            was = old.get(name, (rtol, atol))
            old[name] = (min(was[0], rtol), min(was[1], atol))
        exp = reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad, part)
        entry = {
            "function": fn_name,
            "inputs": encode(_plain_inputs(args, kwargs), None),
            "upstream": encode(exp["upstream"], None),
            "output": encode(exp["output"], None),
            "grads": None if exp["grads"] is None else
            {k: encode(v, None) for k, v in exp["grads"].items()},
        }
        if exp.get("unconnected"):
            entry["unconnected"] = list(exp["unconnected"])
        if part:
            entry["part"] = steps_to_data(part)
        recording.store.setdefault(question, {})[key] = entry
        return exp
    path = snapshot_path(assignment, question)
    digest = call_digest(digest_name(fn_name, part), seed, want_grad, args, kwargs)
    with _cache_lock:
        hit = _decoded_snapshots.get((str(path), key))
    if hit is not None and hit[0] == digest:
        return hit[1]
    data = load_snapshot(path).get(key)
    if data is None:
        raise GraderError(f"snapshot {question}/{key} is missing: run `autograder snapshot`")
    if data["function"] != fn_name or data.get("part", []) != steps_to_data(part) or \
            not _same_inputs(
            decode(data["inputs"], None), _plain_inputs(args, kwargs)):
        raise GraderError(f"snapshot {question}/{key} is stale: run `autograder snapshot`")
    grads = data.get("grads")
    outcome = {
        "status": "ok", "output": decode(data["output"], None),
        "upstream": decode(data["upstream"], None),
        "grads": None if grads is None else {k: decode(v, None) for k, v in grads.items()},
        "grad_error": None, "mutated": [], "forbidden": [], "called": [], "error": None,
    }
    if data.get("unconnected"):
        outcome["unconnected"] = [str(k) for k in data["unconnected"]]
    with _cache_lock:
        _decoded_snapshots[(str(path), key)] = (digest, outcome)
    return outcome


# Decoded snapshot entries, with the digest of the inputs they were checked against.
_decoded_snapshots: dict[tuple[str, str], tuple[bytes, dict]] = {}
