"""How numbers, shapes, indices and values are written in messages."""
from __future__ import annotations

import math
import sys
from typing import Any

from ..sandbox.values import Opaque, Record


def fmt_shape(shape) -> str:
    return "(" + ", ".join(str(int(s)) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def fmt_num(x: float) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4g}" if abs(x) < 10 else f"{x:.4g}"


def fmt_pair(expected: float, got: float) -> tuple[str, str]:
    """Two numbers printed with just enough significant digits to tell them apart, so that a
    message never says "expected X, got X" with the same X."""
    a, b = fmt_num(expected), fmt_num(got)
    if a != b or expected == got or not (math.isfinite(expected) and math.isfinite(got)):
        return a, b
    for digits in range(5, 18):
        a, b = f"{expected:.{digits}g}", f"{got:.{digits}g}"
        if a != b:
            break
    return a, b


def fmt_index(idx) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def describe_type(value: Any) -> str:
    """What a value is, in a few words ("a tensor of shape (2, 3)", "a dict", "None")."""
    # A tensor or an array can only exist where torch or NumPy is loaded: neither is imported
    # here, so a process that only reads results (the class run's main process, unpickling
    # problems) never pays for torch's import.
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None and isinstance(value, torch.Tensor):
        return f"a tensor of shape {fmt_shape(value.shape)}"
    if np is not None and isinstance(value, np.ndarray):
        return f"a NumPy array of shape {fmt_shape(value.shape)}"
    if isinstance(value, Record):
        noun = "a namedtuple" if value.kind == Record.NAMEDTUPLE else "a dataclass"
        return f"{noun} {value.type_name}"
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "a dict"
    if value is None:
        return "None"
    if isinstance(value, Opaque):
        name = value.type_name
        return f"a {name}" if " " in name else f"an object of type {name}"
    if np is not None and isinstance(value, np.generic):   # said as the Python number
        value = value.item()
    return f"a {type(value).__name__}"
