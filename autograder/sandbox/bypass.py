"""Compilers and interpreters inside torch that compute operators past its dispatcher.

Every refusal of a routine meets the operators at torch's dispatcher (`guard.py`). A few parts
of torch compute operators without it: the TensorExpr (NNC) compiler lowers an operator
(`aten::softmax`) into loops of its own and runs them in its IR evaluator, and the static
runtime runs some operators' CPU code directly. No honest submission uses either, and while a
worker refuses anything they are refused, whatever the operator, as a forbidden call: the NNC
module (`torch._C._te`, its functions and every method of its classes, which `__subclasses__`
would reach without the module) and the static runtime's entry points (`evidence.COMPILERS`
names them in feedback). Like every refusal of the worker, they hold once the student's file is
imported (`armed.py`).

TorchScript can hand graphs to fusers that compute past the dispatcher too (NNC on a CPU when
CPU fusion is switched on, oneDNN Graph): those switches are kept off, and their setters do
nothing, so that `torch.jit.fuser(...)` in an honest file still runs (unfused).

`torch.compile`'s default compiler needs a C++ compiler process, which the worker refuses; the
worker's `torch.compile` runs the function as written (`EAGER_COMPILE`), which is what an
honest file gets from it everywhere.
"""
from __future__ import annotations

import sys
import types
from typing import Any, Callable

STATIC_RUNTIME = ("_jit_to_static_module", "_fuse_to_static_module")
# Switches that would hand TorchScript graphs to a compiler running past the dispatcher.
SWITCHES = ("_jit_override_can_fuse_on_cpu", "_jit_override_can_fuse_on_cpu_legacy",
            "_jit_set_te_must_use_llvm_cpu", "_jit_set_llga_enabled")
KEEP = {"__doc__", "__module__", "__dict__", "__weakref__", "__name__", "__qualname__"}

EAGER_COMPILE = ('def compile(model=None, *args, **kwargs):\n'
                 '    if model is None:\n'
                 '        return "@identity"\n'
                 '    return model\n')
IDENTITY = 'def run_as_written(model):\n    return model\n'
NOTHING = 'def switch(*args, **kwargs):\n    return None\n'


def swaps(refusal: Callable[[Any, Callable], Callable], isolated: Callable,
          code_of: Callable[[int], Any]) -> list[tuple[Any, str, Any]]:
    """(object, attribute, new value) for every refusal and switch of this module, applied in
    order, before any student code (the worker) or around each call (`autograder check`).
    `refusal(code, original)` makes the function that stands for `original` (`guard.py`)."""
    import torch

    out: list[tuple[Any, str, Any]] = []
    te_code, static_code = code_of(0), code_of(1)
    te = getattr(torch._C, "_te", None)
    if isinstance(te, types.ModuleType):
        stand_in = types.ModuleType(te.__name__)
        for name, value in list(vars(te).items()):
            if isinstance(value, type):
                out += [(value, attr, _method(refusal(te_code, v), v))
                        for attr, v in list(vars(value).items())
                        if attr not in KEEP and _code_like(v)]
                setattr(stand_in, name, value)
            elif callable(value):
                setattr(stand_in, name, refusal(te_code, value))
            else:
                setattr(stand_in, name, value)
        out.append((torch._C, "_te", stand_in))
        if sys.modules.get(te.__name__) is te:
            out.append((sys.modules, te.__name__, stand_in))
    for name in STATIC_RUNTIME:
        original = getattr(torch._C, name, None)
        if original is not None:
            out.append((torch._C, name, refusal(static_code, original)))
    static = getattr(torch._C, "StaticModule", None)
    if isinstance(static, type):
        out += [(static, attr, _method(refusal(static_code, v), v))
                for attr, v in list(vars(static).items()) if attr not in KEEP and _code_like(v)]
    nothing = isolated(NOTHING, {}, "switch")
    out += [(torch._C, name, nothing) for name in SWITCHES if hasattr(torch._C, name)]
    return out


def _method(function: Callable, original: Any) -> Any:
    """`function` in a class where `original` was: static and class methods keep their kind."""
    if isinstance(original, staticmethod):
        return staticmethod(function)
    if isinstance(original, classmethod):
        return classmethod(function)
    return function


def _code_like(value: Any) -> bool:
    """A method or function of a class (what runs code), not a value or a static property."""
    return callable(value) or isinstance(value, (staticmethod, classmethod))


def eager_compile(isolated: Callable) -> Callable:
    """`torch.compile` that returns what it was given (also as a decorator with options)."""
    identity = isolated(IDENTITY, {}, "run_as_written")
    compile_ = isolated(EAGER_COMPILE, {"@identity": identity}, "compile")
    compile_.__defaults__ = (None,)
    return compile_


def apply(changes: list[tuple[Any, str, Any]], keep: list | None = None) -> bool:
    """Make `changes` (dicts by key, objects by attribute); with `keep`, record the old values
    there (to undo with `undo`). False if one could not be made."""
    ok = True
    for where, name, value in changes:
        try:
            if isinstance(where, dict):
                old = where.get(name, _MISSING)
                where[name] = value
            else:
                old = getattr(where, name, _MISSING)
                setattr(where, name, value)
        except (AttributeError, TypeError, ValueError):
            ok = False
            continue
        if keep is not None:
            keep.append((where, name, old))
    return ok


def undo(kept: list) -> None:
    while kept:
        where, name, old = kept.pop()
        try:
            if isinstance(where, dict):
                if old is _MISSING:
                    where.pop(name, None)
                else:
                    where[name] = old
            elif old is _MISSING:
                delattr(where, name)
            else:
                setattr(where, name, old)
        except (AttributeError, TypeError, ValueError):
            pass


class _Missing:
    pass


_MISSING = _Missing()
