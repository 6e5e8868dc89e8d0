"""Comparisons of a student's outcome with the expected one, and the words that explain them.

Every function here is pure: it takes decoded outcomes (plain tensors or NumPy arrays, never
student objects) and returns `Problem`s. An expected NumPy array asks for a NumPy array back; its
values are compared exactly as tensors are (they are viewed as tensors for the arithmetic). Each problem has a message for public cases, which may quote expected values,
and a message for hidden cases, which says what kind of check failed but never the hidden values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch

from ..memo.tensor_cache import TensorCache
from ..model.status import CaseStatus
from .formatting import describe_type, fmt_index, fmt_num, fmt_pair, fmt_shape
from .paths import PATHS
from .problems import Advice, Problem

if TYPE_CHECKING:
    from .record import CheckRecord

# Said after a NaN message on a case with deliberately large inputs; autograder.grading.runner
# drops or replaces it where other results show it points at the wrong place (`Advice` "overflow").
OVERFLOW_ADVICE = "; with large inputs exp() overflows: subtract the maximum first"

# (rtol, atol) per dtype; questions may override. float64 is strict so that a float32 round trip
# of float64 inputs is caught; float32 leaves room for other correct formulas.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-9, 1e-11),
}


class CheckFailed(AssertionError):
    """Raised by a case that failed; otter shows the message, our runner keeps the problems.

    The check that raises it also says, for the grader's report: which of the student's other
    functions the call used (`called`, for the notes that blame a failing helper), the check's
    `record` (for naming the mistake, `autograder.diagnose`), and a digest of the wrong output
    (`output_digest`, the similarity report's second signal)."""

    def __init__(self, problems: list[Problem], status: str = CaseStatus.FAILED, *,
                 called: list[str] | None = None, record: "CheckRecord | None" = None,
                 output_digest: str = ""):
        self.problems = problems
        self.status = status
        self.called: list[str] = list(called or [])
        self.record = record
        self.output_digest = output_digest
        super().__init__(" ".join(p.public for p in problems[:2]))


class CallStopped(Exception):
    """A call of the student's function that gave no outcome: the grading process stopped it
    (`grading.questions.QuestionStopped`). A refused forbidden routine carries `routines`, and the check
    that made the call attaches a `record` of it (`with_record`), so that diagnosis can still
    name the library shortcut (`autograder.diagnose`)."""

    def __init__(self, message: str = "", routines: list[str] | None = None):
        super().__init__(message)
        self.routines: list[str] = list(routines or [])
        self.record: "CheckRecord | None" = None

    def with_record(self, record: "CheckRecord") -> "CallStopped":
        self.record = record
        return self


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
    relative uncertainty, times the upstream gradient. A table of one place in the output
    (`outputs.paths.PATHS`) is widened the same way, in the dtypes it sets."""
    table = dict(tolerance or {})
    for name, d in slack.items():
        rtol, atol = table.get(name, DEFAULT_TOLERANCE.get(name, (0.0, 0.0)))
        table[name] = _widened(rtol, atol, d, kind, atol_scale)
    if PATHS in table:
        table[PATHS] = {path: {name: _widened(*tol, slack[name], kind, atol_scale)
                               if name in slack else tol for name, tol in sub.items()}
                        for path, sub in table[PATHS].items()}
    return table


def _widened(rtol: float, atol: float, d: float, kind: str | None,
             atol_scale: float | None) -> tuple[float, float]:
    if atol_scale is not None:
        return rtol, atol + (d * atol_scale if kind == "exponent" else d)
    if kind == "exponent":
        return rtol + d, atol
    return rtol, atol + d


def without_places(tolerance: dict | None) -> dict:
    """The per-dtype part of a tolerance table (the case's own, for its gradients)."""
    return {k: v for k, v in (tolerance or {}).items() if k != PATHS}


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


def compare_tensor(expected: torch.Tensor | np.ndarray, got: torch.Tensor | np.ndarray,
                   what: str, *, tolerance: dict | None = None,
                   large_inputs: bool = False,
                   input_dtypes: set[str] | None = None) -> list[Problem]:
    """Shape, dtype, then values (NaN-aware, dtype-aware tolerances); tensors or NumPy arrays.
    `input_dtypes`: the floating-point dtypes among the inputs (None: not known), so that a
    function that takes none is not told to keep its input's dtype."""
    if tuple(got.shape) != tuple(expected.shape):
        same_count = math.prod(got.shape) == math.prod(expected.shape) and \
            got.ndim == expected.ndim
        return [Problem.of("shape", what=what, expected=tuple(expected.shape),
                           got=tuple(got.shape), same_count=same_count)]
    e, g = dtype_name(expected), dtype_name(got)
    if e != g:
        why = None
        if input_dtypes is not None and e.startswith("float") and e not in input_dtypes:
            why = "no_input"
        elif e == "float64" and g == "float32":
            why = "lowered"
        elif e == "float32" and g == "float64":
            why = "promoted"
        elif e == "bool":
            why = "bool"
        return [Problem.of("dtype", what=what, expected=e, got=g, why=why,
                           noun=_noun(expected))]
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
        return [Problem.of("values", what=what, exact=True, n=n, numel=expected.numel(),
                           index=idx, expected=_item(expected, idx), got=_item(got, idx))]
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
        return [Problem.of("nan", what=what, kinds=kinds, n=n, numel=expected.numel(),
                           index=idx, advice=OVERFLOW if large_inputs else None)]
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
    return [Problem.of("values", what=what, max_diff=max_diff,
                       index=fmt_index(idx) if expected.ndim else None,
                       expected=shown_e, got=shown_g, n=n, numel=expected.numel())]


OVERFLOW = Advice("overflow", OVERFLOW_ADVICE)


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
        return [Problem.of("property", case="rows_sum", name=name, value=value)]

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
        return [Problem.of("property", case="blocked", name=name, leak=float(leak.max()))]

    return check


# ------------------------------------------------------------------ gradients

def compare_gradients(expected: dict, got: dict | None, grad_error: str | None, labels: Labels,
                      tolerance: dict | None = None) -> list[Problem]:
    fn = labels.function
    if grad_error == "detached":
        return [Problem.of("gradient", case="detached", function=fn)]
    if grad_error:
        return [Problem.of("gradient", case="failed", function=fn, error=grad_error)]
    if not isinstance(got, dict):
        # The case asked for gradients and none came back: the worker computes them, so a
        # missing answer is a failure of the case, never a reason to skip the check.
        return [Problem.of("gradient", case="none_back", function=fn)]
    for key, exp in expected.items():
        if exp is None:
            continue
        name = labels.arg(key)
        if key not in got:
            return [Problem.of("gradient", case="key_missing", input=name)]
        g = got.get(key)
        if g is None:
            if not bool(exp.abs().max() > 0):
                continue
            return [Problem.of("gradient", case="unreached", input=name)]
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(exp.shape):
            return [Problem.of("gradient", case="shape", input=name)]
        problems = compare_values(exp, g.to(exp.dtype), f"the gradient with respect to {name}",
                                  tolerance=tolerance)
        if problems:
            p = problems[0]
            return [Problem.of("gradient", case="values", input=name, inner_kind=p.kind,
                               inner=dict(p.facts))]
    return []


def compare_mutation(mutated: list[str], labels: Labels, noun: str = "tensors",
                     changes: list[dict] | None = None, inputs: Any = None) -> list[Problem]:
    """The inputs the call changed: arrays changed in place (`mutated`), and, in `changes`
    (`execute.input_changes`), items of dicts and lists replaced, keys removed or added,
    lists resized; `inputs` (args, kwargs) tells a dict's item from a list's."""
    if not mutated:
        return []
    how = {c["path"]: c for c in changes or []}
    said = []
    for key in mutated:
        change = dict(how.get(key, {"path": key, "how": "in_place"}))
        parts = key.split("/")
        change["name"] = labels.arg(key)
        change["var"] = change["name"].strip("`")
        if change["how"] == "rebound":
            parent = "/".join(parts[:-1])
            change["owner"] = labels.arg(parent)
            change["var"] = change["owner"].strip("`")
            change["container"] = "list" if isinstance(_at(inputs, parts[:-1]), list) \
                else "dict"
        else:
            change["owner"] = change["name"]
            change["container"] = "list" if change["how"] == "resized" else "dict"
        said.append(change)
    return [Problem.of("mutated", changes=said, noun=noun)]


def _at(inputs: Any, parts: list[str]) -> Any:
    """The input at a path key's parts (None where the inputs do not have it)."""
    value = inputs
    for p in parts:
        try:
            value = value[int(p)] if isinstance(value, (tuple, list)) else value[p]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return value
