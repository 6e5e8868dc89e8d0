"""A digest of a student's wrong output on a case: the second signal of the similarity report
(students whose hidden cases fail with the same rare wrong values). Made in the trusted
process from the decoded output, kept in the case's result (`CaseResult.output_digest`) and
shown to no one: the report names only the students and the cases, never a value, and the
digest says nothing of the expected one.

Floating values are rounded to SIGNIFICANT significant digits first, so two copies of one
mistake agree even when their float operations run in another order; NaN and infinities keep
their place.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

SIGNIFICANT = 6
# The problems that say the output itself is wrong (a wrong gradient or a changed input may
# come with the right output, which many share and which would say nothing).
WRONG_OUTPUT_KINDS = frozenset({"values", "shape", "dtype", "nan", "type"})


def _rounded(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    with np.errstate(all="ignore"):
        magnitude = np.floor(np.log10(np.abs(x)))
        magnitude = np.where(np.isfinite(magnitude), magnitude, 0.0)
        scale = 10.0 ** (SIGNIFICANT - 1 - magnitude)
        out = np.round(x * scale) / scale
    return np.where(np.isfinite(x), out, x)


def _feed(h, value: Any, depth: int = 0) -> None:
    if depth > 8:
        h.update(b"<deep>")
    elif isinstance(value, torch.Tensor):
        value = torch.Tensor.detach(value)
        if value.dtype == torch.bfloat16:
            value = value.to(torch.float32)
        _feed(h, value.numpy(force=True), depth)
        h.update(str(value.dtype).encode())
    elif isinstance(value, np.ndarray):
        h.update(f"a{value.dtype}{value.shape}".encode())
        data = _rounded(value) if value.dtype.kind in "fc" and value.dtype.kind != "c" \
            else value
        h.update(np.ascontiguousarray(data).tobytes())
    elif isinstance(getattr(value, "fields", None), dict) and \
            isinstance(getattr(value, "type_name", None), str):
        # A namedtuple or a dataclass as data (`sandbox.wire.Record`): its type and fields.
        h.update(f"r{value.kind}:{value.type_name}{len(value.fields)}(".encode())
        for k, v in value.fields.items():
            h.update(str(k).encode() + b":")
            _feed(h, v, depth + 1)
        h.update(b")")
    elif isinstance(value, (tuple, list)):
        h.update(f"{type(value).__name__}{len(value)}(".encode())
        for v in value:
            _feed(h, v, depth + 1)
        h.update(b")")
    elif isinstance(value, dict):
        h.update(f"d{len(value)}(".encode())
        for k in sorted(value, key=str):
            h.update(str(k).encode() + b":")
            _feed(h, value[k], depth + 1)
        h.update(b")")
    elif isinstance(value, float):
        _feed(h, np.array([value]), depth)
    else:
        h.update(f"{type(value).__name__}:{str(value)[:200]}".encode())


def wrong_output_digest(outcome: dict, problems) -> str:
    """A short digest of the output when the case failed because the output is wrong (see
    WRONG_OUTPUT_KINDS); "" otherwise (an error, a timeout, only a gradient or a property)."""
    if outcome.get("status") != "ok" or not any(p.kind in WRONG_OUTPUT_KINDS
                                                for p in problems):
        return ""
    h = hashlib.sha256()
    _feed(h, outcome.get("output"))
    return h.hexdigest()[:20]
