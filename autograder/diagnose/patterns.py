"""Symptoms that real code shows, for fallback rules (`Catalogue.fallback_rule`): predicates and
their `detail` texts on a `CaseEvidence`, which also holds the function's other cases in this
submission (`ev.others`) and the student's failing line (`ev.got["error"]["code"]`).

* `fixed_rank` / `fixed_rank_detail`: code written for one number of dimensions (unpacking the
  shape, positive axes, sizes captured by position, 3-D-only operations), seen from a shape
  error at such a line and, where the cases allow, from ranks that pass against ranks that fail;
* `none_unhandled(param)`: an optional argument left at None reaches an operation that needs a
  tensor, on every case without it, while cases that pass it run;
* `off_by_constant_factor` / `factor_detail`: the right pattern of values, scaled by a large
  constant (a small constant such as eps multiplied where it should be added);
* `normalised_along_other_axis(param)` / `axis_detail`: a probability output summing to 1 along
  another axis than the one asked for.

Nothing here names an assignment's functions: the catalogue decides where each applies. Student
text (messages, the line) is only matched here, never copied into a hint.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

import numpy as np
import torch

from ..sandbox.execute import iter_arrays
from .symptoms import Evidence, portable

_ARRAY = (torch.Tensor, np.ndarray)

# Shape errors that say by themselves that the code expected another number of dimensions.
_RANK_ERRORS = re.compile(
    r"not enough values to unpack|too many values to unpack|dimension out of range"
    r"|is out of bounds for array of dimension|tuple index out of range|axes don't match array"
    r"|number of dims don't match in permute|does not match the length of the desired ordering"
    r"|must be a 3d tensor|expected 3d|expected 3-dimensional|batch1 must be|batch2 must be"
    r"|does not match the number of dimensions|einstein sum subscripts|than subscripts given")
# Shape errors that a fixed-rank line causes on another rank, among other causes: these need
# the cases' ranks as well (fails on one, passes on another).
_SIZE_ERRORS = re.compile(
    r"is invalid for input of size|cannot reshape array of size|must match the size of tensor"
    r"|cannot be multiplied|mismatch in its core dimension|could not be broadcast"
    r"|size mismatch|expected size for first two dimensions")
# What a line that indexes dimensions by position looks like, with what it assumes.
_LINE_PATTERNS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"^\s*\(?\s*\w+\s*(,\s*\w+\s*)+\)?\s*=\s*[\w.\[\]()]*\.(shape\b|size\(\s*\))"),
     "unpacks the shape into a fixed number of names"),
    (re.compile(r"\.(transpose|swapaxes|permute|movedim|moveaxis)\(\s*\(?\s*\d"
                r"|\bnp\.(swapaxes|transpose|moveaxis)\(\s*[^,]+,\s*\(?\s*\d"
                r"|\btorch\.(transpose|permute)\(\s*[^,]+,\s*\(?\s*\d"),
     "counts axes from the front (a positive axis such as 1 or 2)"),
    (re.compile(r"\.(view|reshape)\(\s*\(?\s*[A-Za-z_]"),
     "rebuilds the shape from sizes it took by position"),
    (re.compile(r"\w\.T\b"),
     "reverses every axis with `.T`, which swaps the last two only for 2-D arrays"),
    (re.compile(r"\bbmm\(|\beinsum\("),
     "uses an operation written for one number of dimensions (bmm, or einsum with fixed "
     "letters)"),
    (re.compile(r"\.shape\[\s*\d|\.size\(\s*\d|\b(dim|axis)\s*=\s*\d"
                r"|\.(sum|max|min|amax|amin|mean|var|std|argmax|unsqueeze|squeeze)\(\s*\d"
                r"|\b(torch|np)\.(sum|max|min|amax|amin|mean|var|std)\(\s*[^,()]+,\s*\d"),
     "picks dimensions by their position from the front"),
]


def rank(record: Any) -> int | None:
    """The number of dimensions of a check's first array argument."""
    for a in record.args:
        if isinstance(a, _ARRAY):
            return a.ndim
    return None


def _error(ev: Evidence) -> tuple[str, str]:
    err = ev.got.get("error") or {}
    return str(err.get("message") or "").lower(), str(err.get("code") or "")


def line_assumption(code: str) -> str:
    """What a line that indexes dimensions by position assumes, or "" if it does not."""
    for pattern, words in _LINE_PATTERNS:
        if pattern.search(code):
            return words
    return ""


def wrong_shape(record: Any) -> bool:
    """The call ran and returned an array of another shape than expected (at the same place
    of the output)."""
    if record.got.get("status") != "ok":
        return False
    got = record.got.get("output")
    expected = getattr(record, "expected", None) or {}
    for path, e in iter_arrays(expected.get("output")):
        g = got
        try:
            for p in path:
                g = g[p]
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(g, _ARRAY) and tuple(g.shape) != tuple(e.shape):
            return True
    return False


def _ranks(ev: Any, records: str = "others") -> tuple[set[int], set[int]]:
    """(ranks on which some case of the function passed, ranks on which none did and some
    raised an error or returned a wrong shape). Passing: the call ran and matched the
    reference (output, gradients)."""
    ran, failed = set(), set()
    for r in getattr(ev, records, ()):
        n = rank(r)
        if n is None:
            continue
        if r.got.get("status") == "ok" and r.far <= 1.0:
            ran.add(n)
        elif r.got.get("status") == "error" or wrong_shape(r):
            failed.add(n)
    return ran, failed - ran


def _silently_wrong_shape(ev: Evidence) -> bool:
    """The call ran and returned a wrong shape on a rank where every case of the function
    does so (or raises), while some case of another rank passes: what a reshape, view or
    transpose that takes its sizes or axes by position from the front does on the rank it was
    not written for, without raising."""
    if not wrong_shape(ev):
        return False
    me = rank(ev)
    if me is None:
        return False
    ran, _ = _ranks(ev)
    if not ran or me in ran:
        return False
    same_rank = [r for r in getattr(ev, "others", ()) if rank(r) == me]
    return all(r.got.get("status") == "error" or wrong_shape(r) for r in same_rank)


def fixed_rank(ev: Evidence) -> bool:
    """A shape error at a line that indexes dimensions by position, on a rank on which no case
    of the function passes; when the error alone does not say it is about the number of
    dimensions, some case of another rank must also pass. Or, without an error, a wrong shape
    on a rank where no case passes while another rank's cases do (`_silently_wrong_shape`)."""
    if ev.got.get("status") == "ok":
        return _silently_wrong_shape(ev)
    if ev.got.get("status") != "error":
        return False
    message, code = _error(ev)
    me = rank(ev)
    if me is None or not line_assumption(code):
        return False
    ran, _ = _ranks(ev)
    if me in ran:
        return False        # this rank passes elsewhere: the error is not about the rank
    if _RANK_ERRORS.search(message):
        return True
    if not _SIZE_ERRORS.search(message):
        return False
    if ran:
        return True
    # The line is in a helper of the assignment (the student's attention inside their
    # multi-head): its own cases must run on one rank and fail at this same line on another.
    h_ran, h_failed = _ranks(ev, "helper")
    same_line = any(str((r.got.get("error") or {}).get("code") or "") == code
                    for r in getattr(ev, "helper", ()) if r.got.get("status") == "error")
    return bool(h_ran) and bool(h_failed) and same_line


def _dims(ranks: set[int]) -> str:
    return " or ".join(f"{n}-D" for n in sorted(ranks))


def _silent_detail(ev: Evidence, ran: set[int], failed: set[int]) -> str:
    me = rank(ev)
    where = f"`{ev.function}` returns a wrong shape on {_dims(failed or {me})} inputs, " \
            f"without an error, and passes on {_dims(ran)} ones"
    if me < min(ran):
        how = (f"code that takes sizes or axes by position from the front (`x.shape[0]`, "
               f"a reshape to (B, -1, H, d), a transpose of fixed axes) reads the first "
               f"dimension of a {me}-D input as a batch, so every size after it lands one place "
               f"off")
    else:
        how = (f"code that takes sizes or axes by position from the front (`x.shape[0]`, "
               f"a reshape to (B, -1, H, d), a transpose of fixed axes) folds the extra leading "
               f"dimension of a {me}-D input into the ones it expects, so the sizes land in the "
               f"wrong places")
    return f"{where}: {how}; it works for one number of dimensions only."


def fixed_rank_detail(ev: Evidence) -> str:
    ran, failed = _ranks(ev)
    if ev.got.get("status") == "ok" and ran and rank(ev) is not None:
        return _silent_detail(ev, ran, failed)
    _, code = _error(ev)
    what = line_assumption(code) or "assumes a fixed number of dimensions"
    where = f"`{ev.function}` fails on {_dims(failed)} inputs" if failed else \
        f"`{ev.function}` fails on these inputs"
    if ran:
        where += f" and passes on {_dims(ran)} ones"
    h_ran, h_failed = _ranks(ev, "helper")
    if not ran and h_ran and h_failed and getattr(ev, "helper", ()):
        where += (f"; the failing line is in your `{ev.helper[0].function}`,"
                  f" which passes on {_dims(h_ran)} inputs and fails on {_dims(h_failed)} ones")
    return f"{where}: the failing line {what}, so it works for one number of dimensions only."


def _argument(ev: Evidence, param: str, position: int) -> Any:
    if param in ev.kwargs:
        return ev.kwargs[param]
    return ev.args[position] if len(ev.args) > position else None


@portable
def none_unhandled(param: str, position: int) -> Callable[[Evidence], bool]:
    """Every case without `param` (None) fails with a type error about None (or at a line that
    uses `param`), and some case that passes `param` runs."""
    def check(ev: Evidence) -> bool:
        if _argument(ev, param, position) is not None or ev.got.get("status") != "error":
            return False
        err = ev.got.get("error") or {}
        if err.get("type") not in ("TypeError", "AttributeError"):
            return False
        message, code = _error(ev)
        uses = bool(re.search(rf"\b{re.escape(param)}\b", code))
        if "nonetype" not in message and not uses:
            return False
        with_it = [r for r in getattr(ev, "others", ())
                   if _argument(r, param, position) is not None]
        without = [r for r in getattr(ev, "others", ())
                   if _argument(r, param, position) is None]
        if any(r.got.get("status") == "ok" for r in without):
            return False
        if any(r.got.get("status") == "ok" for r in with_it):
            return True
        # The cases with the argument fail too (another mistake): then the message itself must
        # say None was used, at a line that uses the argument, and the cases with it must fail
        # elsewhere (another message or line), so that None is what this one is about.
        if "nonetype" not in message or not uses:
            return False
        return bool(with_it) and all(_error(r)[0] != message or _error(r)[1] != code
                                     for r in with_it if r.got.get("status") == "error")

    return check


def _array_pairs(ev: Evidence) -> list[tuple[Any, Any]]:
    """(expected array, the student's value at the same place or None): tensors and NumPy
    arrays alike."""
    return ev.pairs(iter_arrays)


def _finite_pairs(ev: Evidence) -> list[tuple[np.ndarray, np.ndarray]] | None:
    pairs = []
    for e, g in _array_pairs(ev):
        if not isinstance(e, _ARRAY) or not isinstance(g, _ARRAY):
            return None
        e = e.detach().double().numpy() if isinstance(e, torch.Tensor) else np.asarray(e, float)
        g = g.detach().double().numpy() if isinstance(g, torch.Tensor) else np.asarray(g, float)
        if e.shape != g.shape or e.size < 4 or not (np.isfinite(e).all()
                                                    and np.isfinite(g).all()):
            return None
        pairs.append((e, g))
    return pairs or None


def _log_factor(ev: Evidence) -> float | None:
    """log10 of how much larger the output is than the expected one, when the two are close
    to proportional (correlated) and the ratio is the same for every output."""
    if ev.got.get("status") != "ok":
        return None
    pairs = _finite_pairs(ev)
    if pairs is None:
        return None
    logs = []
    for e, g in pairs:
        se, sg = float(np.median(np.abs(e))), float(np.median(np.abs(g)))
        if se == 0 or sg == 0:
            return None
        # Centred per position of the last axis, so that an offset added there (a bias such
        # as layer norm's beta) does not hide a scaled pattern.
        lead = tuple(range(e.ndim - 1)) if e.ndim > 1 and e.size > e.shape[-1] else None
        ce, cg = e - e.mean(axis=lead, keepdims=True), g - g.mean(axis=lead, keepdims=True)
        denom = float(np.sqrt((ce * ce).sum() * (cg * cg).sum()))
        if denom == 0 or float((ce * cg).sum()) / denom < 0.5:
            return None
        logs.append(math.log10(sg / se))
    if max(logs) - min(logs) > 1:
        return None
    return sum(logs) / len(logs)


def off_by_constant_factor(ev: Evidence, at_least: float = 3.0) -> bool:
    """The output follows the expected pattern but is 10**at_least times larger or smaller."""
    f = _log_factor(ev)
    return f is not None and abs(f) >= at_least


def factor_detail(ev: Evidence) -> str:
    f = _log_factor(ev)
    if f is None:
        return ""
    return (f"Your values follow the expected pattern but are about 10^{round(abs(f))} times "
            f"{'larger' if f > 0 else 'smaller'} than expected.")


def _sums_to_one(x: np.ndarray, axis: int, tol: float = 1e-3) -> bool:
    s = x.sum(axis=axis)
    return bool(np.all(np.abs(s - 1) <= tol))


def _other_axis(ev: Evidence, param: str, position: int) -> tuple[int, int] | None:
    """(the axis asked for, the one other axis the output sums to 1 along), both from 0."""
    if ev.got.get("status") != "ok":
        return None
    pairs = _finite_pairs(ev)
    if pairs is None or len(pairs) != 1:
        return None
    e, g = pairs[0]
    asked = _argument(ev, param, position)
    asked = -1 if asked is None else asked
    if not isinstance(asked, int) or isinstance(asked, bool) or not -e.ndim <= asked < e.ndim:
        return None
    asked %= e.ndim
    if not _sums_to_one(e, asked) or _sums_to_one(g, asked) or (g < 0).any():
        return None
    along = [a for a in range(g.ndim) if a != asked and g.shape[a] > 1 and _sums_to_one(g, a)]
    return (asked, along[0]) if len(along) == 1 else None


@portable
def normalised_along_other_axis(param: str, position: int) -> Callable[[Evidence], bool]:
    """The output sums to 1 along exactly one axis, not the one `param` asks for."""
    return lambda ev: _other_axis(ev, param, position) is not None


@portable
def axis_detail(param: str, position: int) -> Callable[[Evidence], str]:
    def detail(ev: Evidence) -> str:
        found = _other_axis(ev, param, position)
        if found is None:
            return ""
        asked, along = found
        return (f"Here the output sums to 1 along axis {along} (counting from 0) instead of "
                f"the axis asked for, {asked}.")

    return detail
