"""Every Python implementation of a forbidden routine installed here, to be refused as a routine.

The dispatcher refuses the aten operators that compute a routine (`forbidden_ops.py`), but a
library can compute the same thing from basic operators in Python, which no operator tells
apart from the student's own code: torch's reference implementations (`torch._refs`), the
decomposition tables (`torch._decomp`'s `decomposition_table`, `core_aten_decompositions()`,
the functions of `torch._decomp.decompositions`) and torch's primitives (`torch._prims`). Those
are refused the way the Python-level routines are (`guard.py`: the function object's code is
swapped, so every alias and table entry meets the refusal). Implementations outside torch
(SciPy's) are the assignment's to name (`routines.py`).

They are found by what they implement, not listed by hand: an operator's entries in the
decomposition tables, and the functions named after the operator (or after it without its
leading underscore or its `native_` prefix: `native_layer_norm` -> `layer_norm`) in torch's
reference, decomposition and primitive modules. `autograder lint` shows what was found for each
forbidden routine (`found`), so that an author sees what is covered.
"""
from __future__ import annotations

import importlib
import sys
import types
from typing import Iterable

# Where torch keeps Python implementations of operators.
TORCH_MODULES = ("torch._refs", "torch._refs.nn.functional", "torch._refs.special",
                 "torch._prims", "torch._decomp.decompositions")
MODULES = (*TORCH_MODULES, "torch._decomp")


def _names(op: str) -> set[str]:
    """The names a Python implementation of `op` goes by."""
    bare = op.lstrip("_")
    names = {op, bare}
    if bare.startswith("native_"):
        names.add(bare[len("native_"):])
    return names


def _module(name: str, load: bool) -> types.ModuleType | None:
    if name in sys.modules or not load:
        return sys.modules.get(name)
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - not installed, or broken: nothing of it to refuse
        return None


def _shown(function) -> str:
    module = getattr(function, "__module__", None) or "?"
    return f"{module}.{getattr(function, '__qualname__', getattr(function, '__name__', '?'))}"


# Per operator, what `preload` found (the fork server looks once; its workers inherit this).
_FOUND: dict[str, dict[str, types.FunctionType]] = {}


def implementations(ops: Iterable[str], load: bool = True) -> dict[str, types.FunctionType]:
    """{dotted name: function} of every Python implementation of `ops` (aten operator names)
    installed here. `load`: import the modules that hold them (the fork server does, once);
    otherwise only those already imported count (a student's own process)."""
    ops = list(ops)
    if load and ops and all(op in _FOUND for op in ops):
        return {k: v for op in ops for k, v in _FOUND[op].items()}
    return _look_up(ops, load)


def _look_up(ops: list[str], load: bool) -> dict[str, types.FunctionType]:
    found: dict[str, types.FunctionType] = {}

    def add(function) -> None:
        if isinstance(function, types.FunctionType) and _shown(function) not in found:
            found[_shown(function)] = function

    torch = _module("torch", load)
    decomp = _module("torch._decomp", load)
    if torch is not None and decomp is not None:
        # `core_aten_decompositions()` walks every operator (half a second): looked at where
        # it is paid once for every worker (the fork server), not in a student's own check.
        tables = [getattr(decomp, "decomposition_table", {})] + ([_core_table(decomp)] if load
                                                                  else [])
        for op in ops:
            packet = getattr(torch.ops.aten, op, None) if hasattr(torch.ops.aten, op) else None
            if packet is None:
                continue
            for overload in packet.overloads():
                entry = getattr(packet, overload)
                for table in tables:
                    add(table.get(entry))
    names = set().union(*(_names(op) for op in ops)) if ops else set()
    for name in TORCH_MODULES if torch is not None else ():
        module = _module(name, load)
        for attr in sorted(names):
            add(vars(module).get(attr) if module is not None else None)
    return found


_CORE: list = []


def _core_table(decomp) -> dict:
    """`core_aten_decompositions()`, built once (it walks every operator: a quarter second)."""
    if not _CORE:
        core = getattr(decomp, "core_aten_decompositions", None)
        try:
            _CORE.append(dict(core()) if core is not None else {})
        except Exception:  # noqa: BLE001 - an older torch's signature
            _CORE.append({})
    return _CORE[0]


def preload(ops: Iterable[str] = ()) -> None:
    """Import the modules that hold implementations and look each of `ops` up, once (the fork
    server, before any fork: every worker then finds them without looking)."""
    for name in MODULES:
        _module(name, True)
    for op in ops:
        if op not in _FOUND:
            _FOUND[op] = _look_up([op], True)
