"""Comparing a student's output with the expected one, whatever its structure.

Both are decoded data (`sandbox.wire`): tensors, NumPy arrays, numbers (Python's, or NumPy
scalars with their dtype), strings, None, and tuples, lists, dicts and `Record`s (namedtuples
and dataclasses) of those. The structure is compared first, over the whole output (the kind of
each value, a dict's keys, a record's fields, a sequence's length), then every leaf in order:
arrays by shape, dtype and values (dtype-aware tolerances, NaN-aware), floats and NumPy
scalars within the tolerance of their dtype (a Python float is a float64), ints, bools and
strings exactly. The first problem found is the one reported, named by its place in the output
(`paths.OutputNames`).
"""
from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np
import torch

from ..sandbox.execute import Field
from ..sandbox.wire import Opaque, Record
from .checks import OVERFLOW, compare_tensor, tolerance_for
from .formatting import describe_type, fmt_pair
from .paths import OutputNames, tolerance_at
from .problems import Problem


class Uncomparable(ValueError):
    """The expected output holds a value the grader cannot compare (the reference returned an
    object of its own class): a problem of the assignment, never the student's."""


def compare_output(expected: Any, got: Any, names: OutputNames, *,
                   tolerance: dict | None = None, large_inputs: bool = False,
                   input_dtypes: set[str] | None = None) -> list[Problem]:
    """The first problem of `got` against `expected`: structure first, then leaves."""
    problem = structure_problem(expected, got, (), names)
    if problem is not None:
        return [problem]
    for path, e, g in leaves(expected, got):
        problems = leaf_problems(e, g, names(path), tolerance=tolerance_at(tolerance, path),
                                 large_inputs=large_inputs, input_dtypes=input_dtypes)
        if problems:
            return problems
    return []


# ------------------------------------------------------------------ structure

def _is_array(v: Any) -> bool:
    return isinstance(v, (torch.Tensor, np.ndarray))


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float(v: Any) -> bool:
    return isinstance(v, (float, np.floating))


def _is_bool(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_))


def _fields_text(fields: list[str]) -> str:
    return ", ".join(f"`{f}`" for f in fields[:6]) + (", ..." if len(fields) > 6 else "")


def _keys_text(keys: list[str]) -> str:
    return ", ".join(f'"{k}"' for k in keys[:6]) + (", ..." if len(keys) > 6 else "")


def expected_kind(e: Any) -> str:
    """What the contract asks for at one place, in words ("a dict with the keys ...")."""
    if isinstance(e, Record):
        noun = "a namedtuple" if e.kind == Record.NAMEDTUPLE else "a dataclass"
        return f"{noun} {e.type_name} (fields {_fields_text(list(e.fields))})"
    if isinstance(e, tuple):
        return f"a tuple of {len(e)}"
    if isinstance(e, list):
        return f"a list of {len(e)}"
    if isinstance(e, dict):
        return f"a dict with the keys {_keys_text(list(e))}" if e else "an empty dict"
    if e is None:
        return "None"
    if _is_bool(e):
        return "True or False"
    if isinstance(e, np.generic):
        return f"a NumPy {np.dtype(type(e)).name} number"
    if _is_int(e):
        return "an int"
    if _is_float(e):
        return "a number (a Python float)"
    if isinstance(e, str):
        return "a string"
    raise Uncomparable(f"the reference's output holds {describe_type(e)}, which the grader "
                       "cannot compare: return tensors, arrays, numbers, strings, None, or "
                       "tuples, lists, dicts, namedtuples and dataclasses of them")


def _type(what: str, e: Any, g: Any, tail: str = "") -> Problem:
    return Problem.of("type", form="returned", what=what, expected=expected_kind(e),
                      got=describe_type(g), tail=tail)


def structure_problem(e: Any, g: Any, path: tuple, names: OutputNames) -> Problem | None:
    """The first place where `g` is not built like `e` (kind, keys, fields, length)."""
    what = names(path)
    if isinstance(e, np.ndarray):
        if isinstance(g, np.ndarray):
            return None
        if isinstance(g, torch.Tensor):
            return Problem.of("type", form="returned", what=what, expected="a NumPy array",
                              got="a torch tensor",
                              tail="; work with NumPy arrays and NumPy operations")
        tail = ""
        if isinstance(g, (list, tuple)):
            tail = " (build it with NumPy operations, not Python lists)"
        elif isinstance(g, (bool, int, float, np.generic)):
            tail = " (a single number where an array is expected: check the shapes)"
        return Problem.of("type", form="returned", what=what, expected="a NumPy array",
                          got=describe_type(g), tail=tail)
    if isinstance(e, torch.Tensor):
        if isinstance(g, torch.Tensor):
            return None
        if isinstance(g, np.ndarray):
            return Problem.of("type", form="returned", what=what, expected="a torch tensor",
                              got="a NumPy array",
                              tail="; keep everything in torch (a NumPy round trip also cuts "
                                   "the gradient)")
        return Problem.of("type", form="returned", what=what, expected="a tensor",
                          got=describe_type(g))
    if isinstance(e, Record):
        return _record_structure(e, g, path, names)
    if isinstance(e, tuple):
        seq = g if isinstance(g, tuple) or (isinstance(g, Record) and
                                            g.kind == Record.NAMEDTUPLE) else None
        if seq is None:
            return _type(what, e, g, "." + (_return_all(e, path, names) if _is_array(g) else ""))
        return _sequence_structure(e, list(seq), path, names)
    if isinstance(e, list):
        if not isinstance(g, list):
            return _type(what, e, g)
        return _sequence_structure(e, g, path, names)
    if isinstance(e, dict):
        if not isinstance(g, dict):
            return _type(what, e, g)
        missing = [k for k in e if k not in g]
        extra = [k for k in g if k not in e]
        if missing or extra:
            return Problem.of("type", form="keys", what=what, missing=missing, extra=extra,
                              expected=list(e))
        for k in e:
            problem = structure_problem(e[k], g[k], path + (k,), names)
            if problem is not None:
                return problem
        return None
    return _scalar_structure(e, g, what)


def _return_all(e: tuple, path: tuple, names: OutputNames) -> str:
    """Advice for a single array where a tuple is due: return every item (by their
    `[outputs]` names where the output is the function's own tuple)."""
    count = "both values" if len(e) == 2 else f"all {len(e)} values"
    if not path and isinstance(names.names, list) and len(names.names) == len(e):
        return f" Return {count}: `return {', '.join(names.names)}`."
    return f" Return {count} as a tuple."


def _sequence_structure(e: list | tuple, g: list, path: tuple,
                        names: OutputNames) -> Problem | None:
    if len(g) != len(e):
        return Problem.of("type", form="length", what=names(path), expected=expected_kind(e),
                          length=len(g))
    for i, (x, y) in enumerate(zip(e, g)):
        problem = structure_problem(x, y, path + (i,), names)
        if problem is not None:
            return problem
    return None


def _record_structure(e: Record, g: Any, path: tuple, names: OutputNames) -> Problem | None:
    what = names(path)
    if not isinstance(g, Record) or g.kind != e.kind:
        tail = ""
        if isinstance(g, (tuple, dict)) or isinstance(g, Record):
            tail = f" (build it with `{e.type_name}(...)`, as the contract says)"
        return _type(what, e, g, tail)
    missing = [f for f in e.fields if f not in g.fields]
    extra = [f for f in g.fields if f not in e.fields]
    if missing or extra:
        return Problem.of("type", form="fields", what=what, missing=missing, extra=extra)
    for name, x in e.fields.items():
        problem = structure_problem(x, g.fields[name], path + (Field(name),), names)
        if problem is not None:
            return problem
    return None


def _scalar_structure(e: Any, g: Any, what: str) -> Problem | None:
    if e is None:
        return None if g is None else _type(what, e, g)
    if isinstance(e, Opaque):
        raise Uncomparable(f"the reference's output holds {describe_type(e)}, which the "
                           "grader cannot compare")
    if _is_bool(e):
        return None if _is_bool(g) else _type(what, e, g)
    if _is_int(e):
        return None if _is_int(g) else _type(what, e, g)
    if _is_float(e):
        if _is_float(g) or _is_int(g):
            return None
        tail = ""
        if _is_array(g) and math.prod(g.shape) == 1:
            tail = " (`.item()` gives the number a one-element tensor or array holds)"
        return _type(what, e, g, tail)
    if isinstance(e, str):
        return None if isinstance(g, str) else _type(what, e, g)
    expected_kind(e)    # raises Uncomparable for anything else
    return None


def select_part(e: Any, g: Any, part: tuple, names: OutputNames
                ) -> tuple[Any, Any, Problem | None]:
    """The place `part` of both outputs (a case that compares one part of the output, the rest
    being the student's own design), or the problem that the student's output has no such
    place: its containers on the way must be those of the contract."""
    for depth, step in enumerate(part):
        where = part[:depth]
        what = names(where)
        if isinstance(e, Record):
            if not isinstance(g, Record) or g.kind != e.kind:
                return e, g, _type(what, e, g)
            if step not in g.fields:
                return e, g, Problem.of("type", form="fields", what=what, missing=[step],
                                        extra=[])
            e, g = e.fields[step], g.fields[step]
        elif isinstance(e, (tuple, list)):
            seq = list(g) if isinstance(g, Record) and g.kind == Record.NAMEDTUPLE else g
            if not isinstance(seq, (tuple, list)) or isinstance(e, tuple) != isinstance(
                    seq, tuple) and not isinstance(g, Record):
                tail = "." + _return_all(e, where, names) \
                    if isinstance(e, tuple) and _is_array(g) else ""
                return e, g, _type(what, e, g, tail)
            if len(seq) != len(e):
                return e, g, Problem.of("type", form="length", what=what,
                                        expected=expected_kind(e), length=len(seq))
            e, g = e[step], seq[step]
        elif isinstance(e, dict):
            if not isinstance(g, dict):
                return e, g, _type(what, e, g)
            if step not in g:
                return e, g, Problem.of("type", form="keys", what=what, missing=[step],
                                        extra=[], expected=list(e))
            e, g = e[step], g[step]
    return e, g, None


def leaves(e: Any, g: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any, Any]]:
    """(path, expected leaf, got leaf) in order, for two outputs of the same structure."""
    if isinstance(e, Record):
        for name, x in e.fields.items():
            yield from leaves(x, g.fields[name], path + (Field(name),))
    elif isinstance(e, (tuple, list)):
        seq = list(g) if isinstance(g, Record) else g
        for i, (x, y) in enumerate(zip(e, seq)):
            yield from leaves(x, y, path + (i,))
    elif isinstance(e, dict):
        for k, x in e.items():
            yield from leaves(x, g[k], path + (k,))
    else:
        yield path, e, g


# ------------------------------------------------------------------ leaves

def leaf_problems(e: Any, g: Any, what: str, *, tolerance: dict | None = None,
                  large_inputs: bool = False,
                  input_dtypes: set[str] | None = None) -> list[Problem]:
    """One leaf: an array (shape, dtype, values), a number or a string."""
    if _is_array(e):
        return compare_tensor(e, g, what, tolerance=tolerance, large_inputs=large_inputs,
                              input_dtypes=input_dtypes)
    if e is None:
        return []
    if _is_float(e):
        return compare_number(e, g, what, tolerance=tolerance, large_inputs=large_inputs)
    if e == g and type(e) is type(g) or (_is_int(e) and _is_int(g) and int(e) == int(g)) \
            or (_is_bool(e) and _is_bool(g) and bool(e) == bool(g)):
        return []
    return [Problem.of("values", what=what, exact=True, scalar=True, expected=_shown(e),
                       got=_shown(g))]


def _shown(v: Any) -> str:
    if isinstance(v, str):
        text = repr(v)
        return text if len(text) <= 60 else text[:57] + "...'"
    if isinstance(v, np.generic):
        v = v.item()
    return repr(v)


def number_dtype(v: Any) -> str:
    """A number's dtype: a NumPy scalar's own, float64 for a Python float."""
    return np.dtype(type(v)).name if isinstance(v, np.generic) else "float64"


def compare_number(e: Any, g: Any, what: str, *, tolerance: dict | None = None,
                   large_inputs: bool = False) -> list[Problem]:
    """A float (or a NumPy floating scalar) within the tolerance of its dtype; NaN where NaN
    is expected; a NumPy scalar of another dtype is a dtype problem."""
    exp_dtype = number_dtype(e)
    if isinstance(e, np.generic) and isinstance(g, np.floating) and number_dtype(g) != exp_dtype:
        why = "lowered" if (exp_dtype, number_dtype(g)) == ("float64", "float32") else \
            "promoted" if (exp_dtype, number_dtype(g)) == ("float32", "float64") else None
        return [Problem.of("dtype", what=what, expected=exp_dtype, got=number_dtype(g), why=why,
                           noun="number")]
    ev, gv = float(e), float(g)
    if math.isnan(ev) and math.isnan(gv) or ev == gv:
        return []
    if math.isfinite(ev) and not math.isfinite(gv):
        return [Problem.of("nan", what=what, scalar=True, got=repr(gv),
                           advice=OVERFLOW if large_inputs else None)]
    rtol, atol = tolerance_for(exp_dtype, tolerance)
    if math.isfinite(ev) and math.isfinite(gv) and abs(gv - ev) <= atol + rtol * abs(ev):
        return []
    diff = abs(gv - ev) if math.isfinite(ev) and math.isfinite(gv) else float("inf")
    shown_e, shown_g = fmt_pair(ev, gv)
    return [Problem.of("values", what=what, scalar=True, max_diff=diff, expected=shown_e,
                       got=shown_g, n=1, numel=1)]


__all__ = ["Uncomparable", "compare_output", "compare_number", "expected_kind", "leaves",
           "leaf_problems", "number_dtype", "select_part", "structure_problem"]
