"""Comparisons of a student's outcome with the expected one, and the words that explain them.

Every function here is pure: it takes decoded outcomes (plain tensors or NumPy arrays, never
student objects) and returns `Problem`s. An expected NumPy array asks for a NumPy array back; its
values are compared exactly as tensors are (they are viewed as tensors for the arithmetic). Each problem has a message for public cases, which may quote expected values,
and a message for hidden cases, which says what kind of check failed but never the hidden values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from ..model.status import CaseStatus
from ..memo.tensor_cache import TensorCache
from ..sandbox.wire import Opaque

# Added to a NaN message on a case with deliberately large inputs; autograder.grading.runner replaces
# it where the functions the question calls pass their own questions (so they do not overflow).
OVERFLOW_ADVICE = "; with large inputs exp() overflows: subtract the maximum first"

# (rtol, atol) per dtype; questions may override. float64 is strict so that a float32 round trip
# of float64 inputs is caught; float32 leaves room for other correct formulas.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-11),
}


@dataclass
class Problem:
    """One thing wrong with a case. `kind` groups problems in reports."""

    kind: str
    public: str
    hidden: str | None = None

    def text(self, hidden: bool) -> str:
        return self.hidden if hidden and self.hidden is not None else self.public


class CheckFailed(AssertionError):
    """Raised by a case that failed; otter shows the message, our runner keeps the problems."""

    def __init__(self, problems: list[Problem], status: str = CaseStatus.FAILED):
        self.problems = problems
        self.status = status
        super().__init__(" ".join(p.public for p in problems[:2]))


class CallStopped(Exception):
    """A call of the student's function that gave no outcome: the grading process stopped it
    (`runner.QuestionStopped`). A refused forbidden routine carries `routines`, and the check
    that made the call attaches a `record` of it, so that diagnosis can still name the library
    shortcut (`autograder.diagnose`)."""

    routines: list[str] = []
    record = None


@dataclass
class Labels:
    """How to name things in messages: the function and its arguments."""

    function: str
    arg_names: list[str] = field(default_factory=list)

    def arg(self, key: str) -> str:
        """Name an input from its path key: "0/1/w_q" (positional 1, key w_q) -> `params["w_q"]`."""
        parts = key.split("/") if key else []
        if len(parts) < 2:
            return "the input"
        if parts[0] == "0" and parts[1].isdigit():
            i = int(parts[1])
            name = self.arg_names[i] if i < len(self.arg_names) else f"argument {i + 1}"
        else:
            name = parts[1]
        for p in parts[2:]:
            name += f"[{p}]" if p.isdigit() else f'["{p}"]'
        return f"`{name}`"


# ------------------------------------------------------------------ formatting helpers

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
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {fmt_shape(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {fmt_shape(value.shape)}"
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
    return f"a {type(value).__name__}"


# ------------------------------------------------------------------ structure and arrays

def as_tensor(value: torch.Tensor | np.ndarray) -> torch.Tensor:
    """A tensor view of an array, for the arithmetic of comparisons (tensors pass through)."""
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(value))
    return value


def dtype_name(value: torch.Tensor | np.ndarray) -> str:
    if isinstance(value, np.ndarray):
        return value.dtype.name
    return str(value.dtype).replace("torch.", "")


def _noun(value: Any) -> str:
    return "array" if isinstance(value, np.ndarray) else "tensor"


def tolerance_for(dtype: torch.dtype, overrides: dict | None = None) -> tuple[float, float]:
    name = str(dtype).replace("torch.", "")
    table = {**DEFAULT_TOLERANCE, **(overrides or {})}
    return table.get(name, (0.0, 0.0))


# How the inputs' own precision widens a case's tolerances (`Question(input_precision=...)`).
# A float input x is only known to about one unit in the last place (ulp) of its magnitude; a
# result that moves by less than what `INPUT_ULPS` ulps of the largest input would move it is
# as right as the inputs allow.
#   "exponent": the inputs are exponents (logits); an absolute uncertainty d in an exponent is a
#               relative uncertainty d in exp() of it, so the relative tolerance grows by d.
#   "scale":    the outputs live on the inputs' scale; the absolute tolerance grows by d.
INPUT_PRECISION_KINDS = ("exponent", "scale")
INPUT_ULPS = 2.0


def ulp_of(magnitude: float, dtype_name_: str) -> float:
    """One unit in the last place of `magnitude` in a floating dtype (0 for others)."""
    try:
        eps = float(torch.finfo(getattr(torch, dtype_name_)).eps)
    except (AttributeError, TypeError):
        return 0.0
    if not math.isfinite(magnitude) or magnitude <= 0:
        return 0.0
    return eps * 2.0 ** math.floor(math.log2(magnitude))


def input_precision_slack(kind: str | None, arrays: list,
                          ulps: float = INPUT_ULPS) -> dict[str, float]:
    """{dtype: d}, d being `ulps` ulps of the largest finite input of that dtype: how far the
    inputs' own precision lets a result move (see `INPUT_PRECISION_KINDS`). Empty without a
    `kind`."""
    if kind is None:
        return {}
    if kind not in INPUT_PRECISION_KINDS:
        raise ValueError(f"input_precision must be one of {INPUT_PRECISION_KINDS}, not {kind!r}")
    largest: dict[str, float] = {}
    for a in arrays:
        m = largest_magnitude(a)
        if m > 0:
            name = dtype_name(a)
            largest[name] = max(largest.get(name, 0.0), m)
    return {name: ulps * ulp_of(m, name) for name, m in largest.items()}


def widen(tolerance: dict | None, kind: str | None, slack: dict[str, float],
          atol_scale: float | None = None) -> dict:
    """The question's per-dtype (rtol, atol) table widened by the inputs' precision `slack`.

    For outputs (`atol_scale` None): "exponent" adds d to the relative tolerance, "scale" adds
    d to the absolute one. For gradients, whose size is set by the upstream gradient rather
    than by the inputs, d times `atol_scale` (the largest output times the largest upstream
    value) is added to the absolute tolerance: a gradient of exp() carries its value's
    relative uncertainty, times the upstream gradient."""
    table = dict(tolerance or {})
    for name, d in slack.items():
        rtol, atol = table.get(name, DEFAULT_TOLERANCE.get(name, (0.0, 0.0)))
        if atol_scale is not None:
            extra = d * atol_scale if kind == "exponent" else d
            table[name] = (rtol, atol + extra)
        elif kind == "exponent":
            table[name] = (rtol + d, atol)
        else:
            table[name] = (rtol, atol + d)
    return table


def largest_magnitude(value: Any) -> float:
    """The largest finite absolute value in a tensor or array (0 for anything else)."""
    if isinstance(value, np.ndarray) and value.dtype.kind != "f" or \
            not isinstance(value, (torch.Tensor, np.ndarray)):
        return 0.0
    t = as_tensor(value)
    if not t.is_floating_point() or t.numel() == 0:
        return 0.0
    x = torch.Tensor.detach(t).double().abs()
    x = x[torch.isfinite(x)]
    return float(x.max()) if x.numel() else 0.0


def compare_structure(expected: Any, got: Any, what: str) -> list[Problem]:
    """Same nesting of tuples/lists/tensors as the contract; recurse into containers."""
    if isinstance(expected, np.ndarray):
        if isinstance(got, np.ndarray):
            return []
        if isinstance(got, torch.Tensor):
            return [Problem("type", f"{what} should be a NumPy array, but you returned a torch "
                                    "tensor; work with NumPy arrays and NumPy operations")]
        hint = ""
        if isinstance(got, (list, tuple)):
            hint = " (build it with NumPy operations, not Python lists)"
        elif isinstance(got, (bool, int, float)):
            hint = " (a single number where an array is expected: check the shapes)"
        return [Problem("type", f"{what} should be a NumPy array, but you returned "
                                f"{describe_type(got)}{hint}")]
    if isinstance(expected, torch.Tensor):
        if isinstance(got, torch.Tensor):
            return []
        if isinstance(got, np.ndarray):
            msg = (f"{what} should be a torch tensor, but you returned a NumPy array; keep "
                   "everything in torch (a NumPy round trip also cuts the gradient)")
            return [Problem("type", msg)]
        return [Problem("type", f"{what} should be a tensor, but you returned "
                                f"{describe_type(got)}")]
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or isinstance(got, list):
            hint = ""
            if isinstance(got, (torch.Tensor, np.ndarray)):
                hint = " Return both values: `return output, weights`."
            return [Problem("type", f"{what} should be a tuple of {len(expected)}, but you "
                                    f"returned {describe_type(got)}.{hint}")]
        if len(got) != len(expected):
            return [Problem("type", f"{what} should be a tuple of {len(expected)}, but yours "
                                    f"has {len(got)} items")]
        problems = []
        for i, (e, g) in enumerate(zip(expected, got)):
            problems += compare_structure(e, g, f"item {i} of the returned tuple")
        return problems
    return []


def compare_tensor(expected: torch.Tensor | np.ndarray, got: torch.Tensor | np.ndarray,
                   what: str, *, tolerance: dict | None = None,
                   large_inputs: bool = False,
                   input_dtypes: set[str] | None = None) -> list[Problem]:
    """Shape, dtype, then values (NaN-aware, dtype-aware tolerances); tensors or NumPy arrays.
    `input_dtypes`: the floating-point dtypes among the inputs (None: not known), so that a
    function that takes none is not told to keep its input's dtype."""
    if tuple(got.shape) != tuple(expected.shape):
        pub = f"{what}: expected shape {fmt_shape(expected.shape)}, got {fmt_shape(got.shape)}"
        hid = f"{what} has the wrong shape {fmt_shape(got.shape)}"
        if math.prod(got.shape) == math.prod(expected.shape) and got.ndim == expected.ndim:
            extra = " (the same numbers of elements: a transpose or reshape in the wrong order?)"
            pub += extra
            hid += extra
        return [Problem("shape", pub, hid)]
    e, g = dtype_name(expected), dtype_name(got)
    if e != g:
        msg = f"{what}: expected dtype {e}, got {g}"
        if input_dtypes is not None and e.startswith("float") and e not in input_dtypes:
            msg += (f" (no {e} input is passed to this function, so the result's dtype is not "
                    f"inherited: create it as {e}, as the contract says)")
        elif e == "float64" and g == "float32":
            msg += " (something converted the float64 input to float32: keep the input's dtype)"
        elif e == "float32" and g == "float64":
            msg += (" (something promoted the float32 input to float64, e.g. a float64 array "
                    "or a NumPy float64 scalar such as np.sqrt(d) in the arithmetic: keep the "
                    "input's dtype)")
        elif e == "bool":
            msg += f" (return a bool {_noun(expected)})"
        return [Problem("dtype", msg)]
    return compare_values(as_tensor(expected), as_tensor(got), what, tolerance=tolerance,
                          large_inputs=large_inputs)


# Outcomes are compared many times over (the reference's against every submission's, each
# candidate mistake's against the student's), so a tensor's float64 copy is made once and
# remembered while the tensor is unchanged (same object, same version counter). NumPy's
# operations on small arrays cost far less than torch's.
# The tensors kept and their copies together stay within 128 MB; a tensor above 8 MB is copied
# each time, never kept.
_copies = TensorCache(max_items=8192, max_bytes=128 * 2**20, max_item_bytes=8 * 2**20)
_NOT_FINITE = object()


def finite_float64(t: torch.Tensor) -> np.ndarray | None:
    """A float64 NumPy copy of a floating-point tensor; None if it holds a NaN or infinity."""
    hit = _copies.get(t)
    if hit is not None:
        return None if hit is _NOT_FINITE else hit
    x = torch.Tensor.detach(t).double().numpy()
    value = x if np.isfinite(x).all() else None
    _copies.put(t, _NOT_FINITE if value is None else value,
                x.nbytes + t.numel() * t.element_size())
    return value


def compare_values(expected: torch.Tensor, got: torch.Tensor, what: str, *,
                   tolerance: dict | None = None, large_inputs: bool = False) -> list[Problem]:
    if expected.dtype == torch.bool or not expected.is_floating_point():
        wrong = got != expected
        if not bool(wrong.any()):
            return []
        n = int(wrong.sum())
        idx = fmt_index(torch.nonzero(wrong)[0].tolist())
        pub = (f"{what} differs at {n} of {expected.numel()} positions, first at {idx}: "
               f"expected {_item(expected, idx)}, got {_item(got, idx)}")
        return [Problem("values", pub, f"{what} differs from the reference at {n} of "
                                       f"{expected.numel()} positions")]
    rtol, atol = tolerance_for(expected.dtype, tolerance)
    if expected.numel():
        xe, xg = finite_float64(expected), finite_float64(got)
        if xe is not None and xg is not None and bool(
                (np.abs(xg - xe) <= atol + rtol * np.abs(xe)).all()):
            return []   # the common case, all close: no message to build
    e64, g64 = expected.double(), got.double()
    bad_got = ~torch.isfinite(g64) & torch.isfinite(e64)
    if bool(bad_got.any()):
        n = int(bad_got.sum())
        idx = fmt_index(torch.nonzero(bad_got)[0].tolist())
        kinds = "NaN" if bool(torch.isnan(g64[bad_got]).all()) else "inf or NaN"
        pub = (f"{what} contains {kinds} in {n} of {expected.numel()} values (first at {idx}) "
               f"where finite values are expected")
        if large_inputs:
            pub += OVERFLOW_ADVICE
        return [Problem("nan", pub, pub)]
    close = torch.isclose(g64, e64, rtol=rtol, atol=atol, equal_nan=True)
    if bool(close.all()):
        return []
    diff = (g64 - e64).abs().nan_to_num(nan=float("inf"))
    diff[close] = 0
    flat = int(torch.argmax(diff))
    idx = np.unravel_index(flat, tuple(expected.shape)) if expected.ndim else ()
    max_diff = float(diff.reshape(-1)[flat])
    n = int((~close).sum())
    shown_e, shown_g = fmt_pair(float(e64[idx]), float(g64[idx]))
    where = f" (at index {fmt_index(idx)}: expected {shown_e}, got {shown_g})" \
        if expected.ndim else f" (expected {shown_e}, got {shown_g})"
    pub = f"{what}: values differ by up to {fmt_num(max_diff)}{where}; {n} of " \
          f"{expected.numel()} values are off"
    hid = f"{what}: values differ from the reference by up to {fmt_num(max_diff)} " \
          f"({n} of {expected.numel()} values are off)"
    return [Problem("values", pub, hid)]


def _item(t: torch.Tensor, idx: str):
    index = tuple(int(i) for i in idx.strip("[]").split(", ")) if idx != "[]" else ()
    v = t[index].item()
    return v


# ------------------------------------------------------------------ properties

Property = Callable[[Any, dict, Labels], list[Problem]]


def rows_sum_to_one(item: int | None = None, dim: int = -1, name: str = "weights") -> Property:
    """The returned distribution (item `item` of a tuple, or the output) sums to 1 along `dim`."""

    def check(output: Any, inputs: dict, labels: Labels) -> list[Problem]:
        t = output[item] if item is not None else output
        if isinstance(t, np.ndarray) and t.dtype.kind == "f":
            t = as_tensor(t)
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            return []
        if not -max(t.ndim, 1) <= dim < max(t.ndim, 1):
            return []   # an output of the wrong rank: its shape problem is the one reported
        sums = t.double().sum(dim=dim)
        finite = torch.isfinite(sums)
        if not bool(finite.any()):
            return []
        err = (sums - 1).abs().nan_to_num(nan=0.0)
        worst = int(torch.argmax(err))
        if float(err.reshape(-1)[worst]) <= 1e-3:
            return []
        value = float(sums.reshape(-1)[worst])
        msg = f"rows of your {name} sum to {fmt_num(value)}, not 1"
        return [Problem("property", msg, msg)]

    return check


def zero_where(mask: torch.Tensor | np.ndarray, item: int | None = None,
               name: str = "weights") -> Property:
    """Positions where `mask` is True (blocked) get exactly zero weight."""
    mask = as_tensor(mask)

    def check(output: Any, inputs: dict, labels: Labels) -> list[Problem]:
        t = output[item] if item is not None else output
        if isinstance(t, np.ndarray) and t.dtype.kind == "f":
            t = as_tensor(t)
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            return []
        try:
            blocked = torch.broadcast_to(mask, t.shape)
        except RuntimeError:
            return []
        leak = t.double().abs() * blocked
        if not bool(torch.isfinite(leak).all()) or float(leak.max()) <= 1e-6:
            return []
        msg = (f"your {name} put up to {fmt_num(float(leak.max()))} of weight on blocked "
               f"positions, which must get exactly 0")
        return [Problem("property", msg, msg)]

    return check


# ------------------------------------------------------------------ gradients

def compare_gradients(expected: dict, got: dict | None, grad_error: str | None, labels: Labels,
                      tolerance: dict | None = None) -> list[Problem]:
    if grad_error == "detached":
        msg = (f"no gradient flows back through {labels.function}: its output is not connected "
               "to the inputs' autograd graph (.detach(), .numpy(), .item() or torch.tensor() "
               "on a tensor cut it)")
        return [Problem("gradient", msg, msg)]
    if grad_error:
        msg = f"computing gradients through {labels.function} failed ({grad_error})"
        if "in-place" in grad_error or "inplace" in grad_error:
            msg += ": an in-place operation overwrote a value autograd needs"
        return [Problem("gradient", msg, msg)]
    if not isinstance(got, dict):
        # The case asked for gradients and none came back: the worker computes them, so a
        # missing answer is a failure of the case, never a reason to skip the check.
        msg = (f"no gradients came back from {labels.function}, so the gradient check could "
               "not be made; it counts as failed")
        return [Problem("gradient", msg, msg)]
    for key, exp in expected.items():
        if exp is None:
            continue
        name = labels.arg(key)
        if key not in got:
            msg = f"no gradient came back for {name}, so the gradient check could not be made"
            return [Problem("gradient", msg, msg)]
        g = got.get(key)
        if g is None:
            if not bool(exp.abs().max() > 0):
                continue
            msg = f"no gradient reaches {name}: something in your code detached it"
            return [Problem("gradient", msg, msg)]
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(exp.shape):
            msg = f"the gradient with respect to {name} has the wrong shape"
            return [Problem("gradient", msg, msg)]
        problems = compare_values(exp, g.to(exp.dtype), f"the gradient with respect to {name}",
                                  tolerance=tolerance)
        if problems:
            p = problems[0]
            lead = "your output is right, but "

            def reword(text: str) -> str:
                return lead + text.replace(": values differ", " differs", 1)

            return [Problem("gradient", reword(p.public), reword(p.hidden or p.public))]
    return []


def compare_mutation(mutated: list[str], labels: Labels, noun: str = "tensors") -> list[Problem]:
    if not mutated:
        return []
    names = ", ".join(labels.arg(k) for k in mutated[:3])
    msg = (f"your function changed its input {names} in place; work on new {noun} instead "
           "(e.g. `x = x - m`, not `x -= m`)")
    return [Problem("mutated", msg, msg)]
