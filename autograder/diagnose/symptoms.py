"""Symptoms, for assignment authors writing rules (`when=`) and for the variant engine: the
`Evidence` a rule looks at, the distances between two outcomes of the same call (in tolerances),
and generic predicates on the evidence (NaN only on large inputs, rows summing to 1 along another
axis, the expected output transposed, no gradient, an input changed in place...) with
`all_of` / `any_of` / `not_` to combine them. Nothing here is tied to an assignment."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from ..checking.checks import finite_float64, tolerance_for
from ..checking.outputs import number_dtype
from ..checking.paths import tolerance_at
from ..sandbox.execute import Field, index_into, iter_arrays, iter_leaves, path_key
from ..sandbox.wire import Record

Predicate = Callable[["Evidence"], bool]


def portable(factory: Callable) -> Callable:
    """Marks a factory of predicates (or details): what it makes remembers its name and
    arguments, so that the student bundle can rebuild the rule from data, without the
    catalogue's file (autograder.diagnose.portable)."""
    @functools.wraps(factory)
    def make(*args, **kwargs):
        made = factory(*args, **kwargs)
        made.made_by = (factory.__name__, args, kwargs)
        return made

    return make


@dataclass
class Evidence:
    """What a rule may look at: the case's inputs and both outcomes, all plain data."""

    question: str
    function: str
    args: tuple
    kwargs: dict
    expected: dict          # the reference's outcome: output, grads, upstream...
    got: dict               # the student's outcome: status, output, grads, grad_error, error...
    large_inputs: bool
    tolerance: dict

    def pairs(self, leaves: Callable | None = None) -> list[tuple[Any, Any]]:
        """(expected value, the student's value at the same place or None) for each output
        that `leaves` walks to: by default every array, NumPy arrays seen as tensors (so that
        one predicate serves both tracks); `iter_arrays` keeps them as they are."""
        if leaves is None:
            return [(as_tensor(e), as_tensor(g)) for e, g in self.pairs(iter_arrays)]
        out = []
        for path, e in leaves(self.expected.get("output")):
            g = self.got.get("output")
            try:
                for p in path:
                    g = index_into(g, p)
            except (KeyError, IndexError, TypeError, AttributeError):
                g = None
            out.append((e, g))
        return out

    def item(self, item: int | None) -> tuple[Any, Any]:
        e, g = self.expected.get("output"), self.got.get("output")
        if item is None:
            return as_tensor(e), as_tensor(g)
        try:
            return as_tensor(e[item]), as_tensor(g[item])
        except (KeyError, IndexError, TypeError):
            return as_tensor(e), None


def as_tensor(value: Any) -> Any:
    """A NumPy array as a tensor sharing its memory (numbers and booleans only); anything else
    as it is."""
    if isinstance(value, np.ndarray):
        try:
            return torch.from_numpy(value)
        except TypeError:       # object or string arrays: not comparable as numbers
            return value
    return value


def _is_zero(g: Any) -> bool:
    if g is None:
        return True
    if not isinstance(g, torch.Tensor) or g.numel() == 0:
        return False
    x = finite_float64(g) if g.is_floating_point() else None
    if x is not None:       # the cached copy, compared many times over
        return not x.any()
    return not bool(g.ne(0).any())


INF = float("inf")
# A variant explains a student's outcome when it is within the question's tolerances of it, or
# at least this many times closer to it than the reference is: float64 tolerances are strict
# enough to flag a float32 round trip, so two ways of writing the same mistake (a fill of -1e-9
# or of 0) differ by more than they allow, yet by far less than the mistake itself.
CLOSER = 1e-3


def _tensor_distance(a: torch.Tensor, b: torch.Tensor, tolerance: dict | None) -> float:
    """How many tolerances apart `b` is from the trusted `a` at worst (inf: not comparable)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return INF
    if not a.is_floating_point():
        return 0.0 if bool(torch.equal(a, b)) else INF
    if a.numel() == 0:
        return 0.0
    xa, xb = finite_float64(a), finite_float64(b)
    rtol, atol = tolerance_for(a.dtype, tolerance)
    if xa is not None and xb is not None and atol > 0:
        # The common case, both finite: in NumPy, whose small-array operations cost far less
        # than torch's, on float64 copies made once per tensor.
        return float((np.abs(xa - xb) / (atol + rtol * np.abs(xa))).max())
    a64, b64 = a.double(), b.double()
    ratio = (a64 - b64).abs() / (atol + rtol * a64.abs())
    undefined = torch.isnan(ratio)      # a NaN or an infinity on either side (or 0/0)
    if bool(undefined.any()):
        same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
        if not bool(same[undefined].all()):
            return INF
        ratio = ratio.masked_fill(undefined, 0.0)
    return float(ratio.max())


def _value_distance(a: Any, b: Any, tolerance: dict | None, limit: float = INF,
                    path: tuple = ()) -> float:
    """How many tolerances apart `b` is from the trusted `a`, compared as grading compares
    them (`checking.outputs`): structure exactly, arrays and floats within the tolerance of
    their dtype at their place in the output, NaN where NaN is; inf when not comparable."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            a, b = torch.from_numpy(a), torch.from_numpy(b)
        except TypeError:
            return INF
    if isinstance(a, torch.Tensor):
        return _tensor_distance(a, b, tolerance_at(tolerance, path)) \
            if isinstance(b, torch.Tensor) else INF
    if isinstance(a, Record):
        if not (isinstance(b, Record) and b.kind == a.kind and a.fields.keys() == b.fields.keys()):
            return INF
        return _worst(((a.fields[k], b.fields[k], Field(k)) for k in a.fields), tolerance,
                      limit, path)
    if isinstance(a, (tuple, list)):
        if not (isinstance(b, (tuple, list)) and isinstance(a, tuple) == isinstance(b, tuple)
                and len(a) == len(b)):
            return INF
        return _worst(((x, y, i) for i, (x, y) in enumerate(zip(a, b))), tolerance, limit, path)
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return INF
        return _worst(((a[k], b[k], k) for k in a), tolerance, limit, path)
    if isinstance(a, (float, np.floating)):
        return _number_distance(a, b, tolerance_at(tolerance, path))
    if a is None or isinstance(a, (bool, int, str, np.generic)):
        return 0.0 if type(a) is type(b) and a == b else INF
    return INF


def _worst(pairs, tolerance: dict | None, limit: float, path: tuple) -> float:
    worst = 0.0
    for x, y, step in pairs:
        worst = max(worst, _value_distance(x, y, tolerance, limit, path + (step,)))
        if worst > limit:
            break
    return worst


def _number_distance(a: Any, b: Any, tolerance: dict | None) -> float:
    """A float (or NumPy floating scalar) `b` from the trusted `a`, in tolerances of `a`'s
    dtype (a Python float's is float64); NaN is NaN's equal, a NumPy scalar of another dtype is
    not comparable."""
    if not isinstance(b, (float, np.floating)) or isinstance(a, np.generic) and \
            number_dtype(a) != number_dtype(b):
        return INF
    x, y = float(a), float(b)
    if x == y or math.isnan(x) and math.isnan(y):
        return 0.0
    if not (math.isfinite(x) and math.isfinite(y)):
        return INF
    rtol, atol = tolerance_for(number_dtype(a), tolerance)
    scale = atol + rtol * abs(x)
    return abs(x - y) / scale if scale > 0 else INF


def _values_match(a: Any, b: Any, tolerance: dict | None) -> bool:
    return _value_distance(a, b, tolerance) <= 1.0


def _close(a: torch.Tensor, b: torch.Tensor, tolerance: dict | None) -> bool:
    return _tensor_distance(a, b, tolerance) <= 1.0


def _grad_distance(a: dict, b: dict, tolerance: dict | None, limit: float = INF) -> float:
    if a.get("grad_error") or b.get("grad_error"):
        return 0.0 if a.get("grad_error") == b.get("grad_error") else INF
    ga, gb = a.get("grads"), b.get("grads")
    if ga is None or gb is None:
        return 0.0 if ga is None and gb is None else INF
    worst = 0.0
    for key in set(ga) | set(gb):
        x, y = ga.get(key), gb.get(key)
        if _is_zero(x) and _is_zero(y):
            continue
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) \
                or x.shape != y.shape:
            return INF
        if y.dtype != x.dtype:
            y = y.to(x.dtype)
        worst = max(worst, _tensor_distance(x, y, tolerance))
        if worst > limit:
            break
    return worst


def distance(a: dict, b: dict, tolerance: dict | None = None, limit: float = INF,
             grads: bool = True) -> float:
    """How far outcome `b` is from the trusted outcome `a` of the same call, in tolerances:
    the worst over output and gradients; inf when they differ in kind (structure, shape, dtype,
    NaN or infinities, changed inputs, forbidden calls, the error raised). Stops early, with
    some value above `limit`, once it is clearly beyond it."""
    if a.get("status") != b.get("status"):
        return INF
    if a.get("status") != "ok":
        ea, eb = a.get("error") or {}, b.get("error") or {}
        same = ea.get("type") == eb.get("type") and ea.get("message") == eb.get("message")
        return 0.0 if same else INF
    if sorted(a.get("mutated") or []) != sorted(b.get("mutated") or []):
        return INF
    if bool(a.get("forbidden")) != bool(b.get("forbidden")):
        return INF
    d = _value_distance(a.get("output"), b.get("output"), tolerance, limit)
    if d > limit or not grads:
        return d
    return max(d, _grad_distance(a, b, tolerance, limit))


def explains(variant: dict, got: dict, reference: dict, tolerance: dict | None = None,
             far: float | None = None, grads: bool = True) -> bool:
    """Does the variant's outcome account for the student's, far better than the reference?

    `far` is the reference's distance to the student's outcome, if already known. When it is
    inf (the reference differs in kind), only a variant within tolerance explains the outcome.
    """
    if far is None:
        far = distance(reference, got, tolerance)
    limit = max(1.0, CLOSER * far) if far < INF else 1.0
    return distance(variant, got, tolerance, limit, grads) <= limit


# Symptoms: predicates on the evidence, for `when=` in a catalogue. Generic, not tied to any
# assignment; combine them with all_of / any_of / not_.

def output_matches_reference(ev: Evidence) -> bool:
    """The output is right (gradients, changed inputs or calls are what fails)."""
    return ev.got.get("status") == "ok" and \
        _values_match(ev.expected.get("output"), ev.got.get("output"), ev.tolerance)


def gradient_cut(ev: Evidence) -> bool:
    """The output is right but no (or an all-zero) gradient reaches an input that needs one.

    Not when that input equals another one (attention of x with itself): there, using the
    wrong input gives the right values and no gradient too.
    """
    if not output_matches_reference(ev):
        return False
    inputs = {path_key(p): t for p, t in iter_leaves((tuple(ev.args), dict(ev.kwargs)))}

    def aliased(key: str) -> bool:
        t = inputs.get(key)
        return t is None or any(k != key and u.shape == t.shape and u.dtype == t.dtype
                                and bool(torch.equal(u, t)) for k, u in inputs.items())

    if ev.got.get("grad_error") == "detached":
        return not any(aliased(k) for k, t in inputs.items() if t.is_floating_point())
    expected, got = ev.expected.get("grads"), ev.got.get("grads")
    if not expected or got is None:
        return False
    return any(not _is_zero(e) and _is_zero(got.get(k)) and not aliased(k)
               for k, e in expected.items())


def changed_input(ev: Evidence) -> bool:
    """An input was modified in place, or autograd complained about an in-place operation."""
    if ev.got.get("mutated"):
        return True
    text = f"{(ev.got.get('error') or {}).get('message') or ''} {ev.got.get('grad_error') or ''}"
    return "in-place" in text or "inplace" in text


def lowered_precision(ev: Evidence) -> bool:
    """A float64 result came back in a lower floating-point precision."""
    return any(e.dtype == torch.float64 and isinstance(g, torch.Tensor) and g.is_floating_point()
               and g.dtype != torch.float64 for e, g in ev.pairs())


def raised_precision(ev: Evidence) -> bool:
    """A float32 result came back as float64 (a float64 constant such as NumPy's `np.sqrt` of
    a number entered float32 maths, or the input was converted)."""
    return any(e.dtype == torch.float32 and isinstance(g, torch.Tensor)
               and g.dtype == torch.float64 for e, g in ev.pairs())


def computed_in_float32(ev: Evidence) -> bool:
    """A float64 result whose every value is a float32 number, while the expected one's are
    not, and that are right to float32's precision: the inputs (or the whole computation) went
    through float32 and the result was cast back, rather than one float32 constant entering
    float64 maths."""
    pairs = [(e, g) for e, g in ev.pairs() if isinstance(e, torch.Tensor)
             and e.dtype == torch.float64 and isinstance(g, torch.Tensor)
             and g.dtype == torch.float64 and g.shape == e.shape and g.numel() >= 4]
    if not pairs:
        return False

    def in_float32(t: torch.Tensor) -> bool:
        t = t.detach()
        finite = torch.isfinite(t)
        return bool((t[finite].float().double() == t[finite]).all())

    def close(e: torch.Tensor, g: torch.Tensor) -> bool:
        # Right to float32's precision: a float32 computation, not another mistake in float32.
        xe, xg = finite_float64(e), finite_float64(g)
        if xe is None or xg is None or not xe.size:
            return False
        scale = float(np.abs(xe).max())
        return scale > 0 and float(np.abs(xg - xe).max()) <= 1e-4 * scale

    return all(in_float32(g) and close(e, g) for e, g in pairs) and \
        not all(in_float32(e) for e, _ in pairs)


# float32 keeps 24 bits: one rounding to float32 leaves a relative error of at most 2**-24. A
# float64 result that went through one such rounding (a float32 constant, one float32 cast) is
# off by a few of those, relative to its own size; float64 rounding alone stays far below.
_F32_UNIT = 2.0 ** -24
_F32_BAND = (1e-11, 8 * _F32_UNIT)


def _float32_sized(e: Any, g: Any) -> bool | None:
    """For one float64 pair: True if the student's value is off by float32 rounding (relative
    to the largest expected value), False if off by more or by float64 noise only, None if
    not comparable."""
    if not isinstance(e, torch.Tensor) or not isinstance(g, torch.Tensor) or \
            e.dtype != torch.float64 or g.shape != e.shape:
        return None
    if g.dtype != torch.float64:
        return False    # a result no longer float64 is `lowered_precision`'s, not this rule's
    xe, xg = finite_float64(e), finite_float64(g)
    if xe is None or xg is None or not xe.size:
        return None
    scale = float(np.abs(xe).max())
    if scale == 0:
        return None
    worst = float(np.abs(xg - xe).max()) / scale
    return _F32_BAND[0] < worst <= _F32_BAND[1]


def float32_rounding(ev: Evidence) -> bool:
    """A float64 result in float64, off by float32-sized rounding only: a float32 constant
    (`torch.tensor(d_k)`, `torch.FloatTensor([d])`) or a float32 cast entered float64 maths.
    Looks at the outputs, or at the gradients when the outputs are right."""
    if ev.got.get("status") != "ok":
        return False
    verdicts = [_float32_sized(e, g) for e, g in ev.pairs()]
    if any(v is False for v in verdicts):
        return False
    if any(verdicts):
        return True
    expected, got = ev.expected.get("grads") or {}, ev.got.get("grads") or {}
    verdicts = [_float32_sized(e, got.get(k)) for k, e in expected.items() if e is not None]
    return any(verdicts) and not any(v is False for v in verdicts)


def mixed_precision_error(ev: Evidence) -> bool:
    """The call failed because float32 and float64 tensors met (e.g. in a matmul)."""
    message = str((ev.got.get("error") or {}).get("message") or "").lower()
    return ev.got.get("status") == "error" and "double" in message and "float" in message


def forbidden_call(ev: Evidence) -> bool:
    """The student called a library function the question forbids."""
    return bool(ev.got.get("forbidden"))


def non_finite_where_expected_finite(ev: Evidence) -> bool:
    for e, g in ev.pairs():
        if isinstance(g, torch.Tensor) and g.shape == e.shape and g.is_floating_point() \
                and e.is_floating_point():
            if bool((~torch.isfinite(g) & torch.isfinite(e)).any()):
                return True
    return False


def nan_only_on_large_inputs(ev: Evidence) -> bool:
    """NaN or inf where the reference is finite, in a case with deliberately large inputs."""
    return ev.large_inputs and non_finite_where_expected_finite(ev)


@portable
def sums_to_one_along(dim: int, item: int | None = None, tol: float = 1e-3) -> Predicate:
    """The (item of the) output sums to 1 along `dim`, wherever the sums are finite."""
    def check(ev: Evidence) -> bool:
        _, g = ev.item(item)
        if not isinstance(g, torch.Tensor) or not g.is_floating_point() or g.ndim == 0:
            return False
        try:
            sums = g.double().sum(dim=dim)
        except (IndexError, RuntimeError):
            return False
        finite = torch.isfinite(sums)
        return bool(finite.any()) and bool(((sums[finite] - 1).abs() <= tol).all())

    return check


@portable
def equals_expected_transposed(item: int | None = None) -> Predicate:
    """The (item of the) output is the expected one with its last two dimensions swapped."""
    def check(ev: Evidence) -> bool:
        e, g = ev.item(item)
        if not isinstance(e, torch.Tensor) or not isinstance(g, torch.Tensor) or e.ndim < 2:
            return False
        t = e.transpose(-2, -1)
        return _close(t, g, ev.tolerance) and not _close(e, g, ev.tolerance)

    return check


def values_right_dtype_wrong(ev: Evidence) -> bool:
    """Every value is right but some result has another dtype (e.g. 0/1 floats for bools)."""
    pairs = ev.pairs()
    if not pairs or not any(isinstance(g, torch.Tensor) and g.dtype != e.dtype for e, g in pairs):
        return False
    for e, g in pairs:
        if not isinstance(g, torch.Tensor) or g.shape != e.shape:
            return False
        if not _close(e.double(), g.double(), None):
            return False
    return True


@portable
def expected_dtype(name: str) -> Predicate:
    """Some expected result has this dtype ("bool", "float64"...)."""
    return lambda ev: any(str(e.dtype).replace("torch.", "") == name for e, _ in ev.pairs())


@portable
def raised(*words: str) -> Predicate:
    """The student's call raised an error whose message contains all these words."""
    def check(ev: Evidence) -> bool:
        message = str((ev.got.get("error") or {}).get("message") or "").lower()
        return ev.got.get("status") == "error" and all(w.lower() in message for w in words)

    return check


@portable
def all_of(*predicates: Predicate) -> Predicate:
    return lambda ev: all(p(ev) for p in predicates)


@portable
def any_of(*predicates: Predicate) -> Predicate:
    return lambda ev: any(p(ev) for p in predicates)


@portable
def not_(predicate: Predicate) -> Predicate:
    return lambda ev: not predicate(ev)
