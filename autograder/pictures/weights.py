"""The data of a heatmap picture, from a failing public check: plain lists, JSON-able, kept on
the case (`CaseResult.picture`) so that every output can draw it."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..sandbox.execute import iter_arrays

MAX_ROWS = 16
MAX_COLS = 16


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point():
            return None
        return value.detach().to(torch.float64).cpu().numpy()
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value.astype(np.float64)
    return None


def _normalised_axis(e: np.ndarray) -> int | None:
    """The axis along which every slice of `e` sums to 1 (the last one first), or None."""
    if e.ndim == 0 or e.size == 0 or not np.isfinite(e).all():
        return None
    for axis in [e.ndim - 1] + list(range(e.ndim - 1)):
        if e.shape[axis] > 1 and np.allclose(e.sum(axis=axis), 1.0, atol=1e-3):
            return axis
    return None


def _table(x: np.ndarray, axis: int) -> np.ndarray:
    """The slices along `axis` as the rows of a 2-D table (at most MAX_ROWS x MAX_COLS)."""
    rows = np.moveaxis(x, axis, -1).reshape(-1, x.shape[axis])
    return rows[:MAX_ROWS, :MAX_COLS]


def _cells(t: np.ndarray) -> list[list[float | None]]:
    return [[float(v) if np.isfinite(v) else None for v in row] for row in t]


def picture_of(record: Any) -> dict | None:
    """{"title", "expected", "got", "rows", "cols", "cropped"} for a failing check whose
    expected result (or an item of it) sums to 1 along an axis, when the student's has the
    same shape; None otherwise. Call it for public cases only."""
    got_output = record.got.get("output") if record.got.get("status") == "ok" else None
    if got_output is None:
        return None
    names = (record.assignment.config.get("outputs") or {}).get(record.function) or []
    expected_output = record.expected.get("output")
    for path, value in iter_arrays(expected_output):
        e = _as_array(value)
        axis = None if e is None else _normalised_axis(e)
        if axis is None:
            continue
        g = got_output
        try:
            for p in path:
                g = g[p]
        except (KeyError, IndexError, TypeError):
            return None
        g = _as_array(g)
        if g is None or g.shape != e.shape:
            return None
        item = names[path[0]] if path and isinstance(path[0], int) and path[0] < len(names) \
            else "output"
        weights = item == "weights" and e.ndim >= 2 and axis == e.ndim - 1
        rows, cols = e.size // e.shape[axis], e.shape[axis]
        return {
            "title": f"the {item} of {record.function}",
            "expected": _cells(_table(e, axis)), "got": _cells(_table(g, axis)),
            "rows": "query" if weights else "slice",
            "cols": "key" if weights else f"position along axis {axis}",
            "cropped": rows > MAX_ROWS or cols > MAX_COLS,
        }
    return None
