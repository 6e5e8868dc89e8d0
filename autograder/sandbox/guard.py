"""Refuse a question's forbidden routines where every route to them meets, during its calls only.

Two kinds of routine, two meeting points:

* **torch routines** end in a few aten operators (`forbidden_ops`). `arm` registers, through
  the dispatcher's own registration API, a kernel for each of them (every overload, every CPU
  and composite key that has a kernel) on top of torch's; `disarm` removes it, and torch's
  kernel is back. Whatever Python name, alias, container, private entry point or custom
  `autograd.Function` led there, forward or backward, the call reaches the kernel. Registering
  and removing a few dozen kernels costs microseconds, and while nothing is armed torch runs
  exactly as before (no Python in the way of any operator).
* **Python-level library functions** (the NumPy track's `scipy.special.softmax`) have no
  dispatcher. A plain Python function is changed in place: its `__code__` is swapped for one
  that refuses, so every reference to the function object (module attributes, aliases bound
  with `from ... import`, entries of lists and dicts, closures) meets the refusal. Other
  callables are replaced in their module and in the module that defines them.

What a refusal does is the caller's choice (`on_hit(index)`, `index` into the call's forbidden
names): in the sandboxed worker it ends the process with an exit status that names the routine,
which the trusted side reads from the fork server, so nothing the student's code does afterwards
can hide it (`evidence.py`); in the student's own process (`autograder check`, otter) it records
the name and raises.

The state lives in closures made before any student code runs and held only by the engine's
frames (the returned functions), never in a module global.
"""
from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import Any, Callable, Iterable

from .forbidden_ops import ROUTINE_OPS, kernel_keys, overloads
from .library_routines import implementations

# The source of the refusing code: string constants stand where the objects go (`_bind`), so
# the code reads no global name and its function needs no closure.
_REFUSE_SOURCE = 'def refuse(*args, **kwargs):\n    return "@on_hit"("@index")\n'


_TEMPLATE: list[types.CodeType] = []


def _template() -> types.CodeType:
    if not _TEMPLATE:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)   # "'str' object is not callable"
            module = compile(_REFUSE_SOURCE, "<forbidden routine>", "exec")
        _TEMPLATE.append(next(c for c in module.co_consts if isinstance(c, types.CodeType)))
    return _TEMPLATE[0]


def _bind(template: types.CodeType, consts: dict[str, Any]) -> types.CodeType:
    """`template` (`refuse(*args, **kwargs): return on_hit(index)`) with the objects in place."""
    return template.replace(co_consts=tuple(consts.get(c, c) if isinstance(c, str) else c
                                            for c in template.co_consts))


_compiled: dict[str, types.CodeType] = {}


def isolated(source: str, consts: dict[str, Any], name: str) -> Callable:
    """A function from `source` (one `def` whose body reads no global name: string constants
    such as "@x" stand where the objects of `consts` go), with empty globals: it holds nothing
    but those objects, so handing it to the student's code hands out nothing of the engine."""
    if source not in _compiled:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)   # "'str' object is not callable"
            module = compile(source, "<grader>", "exec")
        _compiled[source] = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(_bind(_compiled[source], consts), {"__builtins__": {}}, name)


def _python_target(name: str):
    """(owner, attribute, function) for a dotted `package.module.function`, or None."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is None:
            try:
                module = importlib.import_module(".".join(parts[:cut]))
            except Exception:  # noqa: BLE001 - not a module, or not installed
                continue
        owner: Any = module
        try:
            for a in parts[cut:-1]:
                owner = getattr(owner, a)
            return owner, parts[-1], getattr(owner, parts[-1])
        except AttributeError:
            return None
    return None


def _is_torch(name: str) -> bool:
    return name.startswith(("torch.", "autograd."))


def own_code() -> set[types.CodeType]:
    """The code objects of this module's functions (nested ones included): the audit hook lets
    them, and only them, build code and swap a function's code."""
    found, todo = set(), [f.__code__ for f in (_template, _bind, isolated, make_guard, _plan,
                                                _refusal)]
    while todo:
        code = todo.pop()
        found.add(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType) and c not in found]
    return found


_WITH_FREEVARS: dict[tuple[str, ...], types.CodeType] = {}


def _refusal(template: types.CodeType, on_hit: Callable, index: int,
             freevars: tuple[str, ...] = ()) -> types.CodeType:
    """The refusing code (`on_hit(index)`), with `freevars` as free variables when it replaces
    the code of a function that has a closure (`__code__` must keep the closure's size)."""
    if freevars and freevars in _WITH_FREEVARS:
        template = _WITH_FREEVARS[freevars]
    elif freevars:
        names = ", ".join(freevars)
        source = (f"def outer():\n    {' = '.join(freevars)} = None\n"
                  f"    def refuse(*args, **kwargs):\n        ({names},)\n"
                  f"        return \"@on_hit\"(\"@index\")\n    return refuse\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            outer = next(c for c in compile(source, "<forbidden routine>", "exec").co_consts
                         if isinstance(c, types.CodeType))
        template = _WITH_FREEVARS[freevars] = next(
            c for c in outer.co_consts if isinstance(c, types.CodeType))
    return _bind(template, {"@on_hit": on_hit, "@index": index})


def _functions_of(function: Any) -> list[types.FunctionType]:
    """A Python function and every function it wraps (`__wrapped__`, as decorators record it):
    each is swapped, so that neither the wrapper nor the original reached another way runs."""
    found: list[types.FunctionType] = []
    while isinstance(function, types.FunctionType) and function not in found:
        found.append(function)
        function = getattr(function, "__wrapped__", None)
    return found


def _plan(names: tuple[str, ...], on_hit: Callable[[int], Any], offset: int, limit: int,
          targets: dict, table: dict, op_plan: dict, load: bool = True) -> tuple[list, list]:
    """What refusing `names` does: dispatcher registrations (overload, key, kernel) and
    Python-level swaps (object, attribute, refusing value): the named library functions, and
    every Python implementation of a mapped routine (`library_routines`; `load`: import the
    modules that hold them, else only those already imported)."""
    template = _template()
    kernels: dict[int, Callable] = {}

    def kernel(index: int) -> Callable:
        if index not in kernels:
            kernels[index] = types.FunctionType(
                _bind(template, {"@on_hit": on_hit, "@index": offset + min(index, limit - 1)}),
                {"__builtins__": {}}, "refuse")
        return kernels[index]

    registrations, mapped = [], {}
    for index, name in enumerate(names):
        for op in table.get(name, ()):
            if op in mapped:
                continue
            mapped[op] = name
            for overload, keys in op_plan.get(op, ()):
                for key in keys:
                    registrations.append((overload, key, kernel(index)))
    routed = set(mapped.values())
    swaps = []
    for index, name in enumerate(names):
        if "." not in name or name.startswith("autograd."):
            continue
        target = targets[name] if name in targets else _python_target(name)
        if target is None:
            continue
        owner, attr, function = target
        at = offset + min(index, limit - 1)
        if isinstance(function, types.FunctionType):
            # In place: every reference to this function object meets the refusal.
            swaps += [(f, "__code__", _refusal(template, on_hit, at, f.__code__.co_freevars))
                      for f in _functions_of(function)]
        elif not _is_torch(name) or name not in routed:
            # A built-in the dispatcher table maps is refused there; any other is replaced
            # by name where it lives (`torch.mul`, whose operator `2 * x` reaches too).
            homes = [(owner, attr)]
            home = sys.modules.get(getattr(function, "__module__", None) or "")
            short = getattr(function, "__name__", None)
            if home is not None and short and getattr(home, short, None) is function:
                homes.append((home, short))
            swaps += [(where, key, kernel(index)) for where, key in homes]
    swapped = {id(where) for where, attr, _ in swaps if attr == "__code__"}
    for index, name in enumerate(names):
        at = offset + min(index, limit - 1)
        for function in implementations(table.get(name, ()), load).values():
            for f in _functions_of(function):
                if id(f) not in swapped:
                    swapped.add(id(f))
                    swaps.append((f, "__code__", _refusal(template, on_hit, at,
                                                          f.__code__.co_freevars)))
    return registrations, swaps


_STATIC: list = []                  # (operator table, each operator's overloads and keys)
_TARGETS: dict[str, Any] = {}       # dotted name -> (owner, attribute, function) or None


def _tables(names: Iterable[str]) -> tuple[dict, dict, dict]:
    """The operator table, each operator's overloads and keys, and the library functions of
    `names`: looked up once per process (the fork server's, inherited by its workers:
    `prepare`), before anything is registered."""
    if not _STATIC:
        table = {name: tuple(ops) for name, ops in ROUTINE_OPS.items()}
        _STATIC.append((table, {op: [(o, tuple(kernel_keys(o))) for o in overloads(op)]
                                for op in {op for ops in table.values() for op in ops}}))
    table, op_plan = _STATIC[0]
    for name in list(table) + list(names):
        if "." in name and not name.startswith("autograd.") and name not in _TARGETS:
            _TARGETS[name] = _python_target(name)
    return table, op_plan, _TARGETS


def prepare(names: Iterable[str] = ()) -> None:
    """Everything a worker's `install` looks up, looked up now (in the fork server): the tables,
    the library functions, every Python implementation of a mapped routine and the refusing
    code each needs, so that arming a worker only registers and swaps."""
    table, _, _ = _tables(names)
    template = _template()
    for ops in table.values():
        for function in implementations(ops).values():
            for f in _functions_of(function):
                _refusal(template, None, 0, f.__code__.co_freevars)


def install(names: Iterable[str], on_hit: Callable[[int], Any], offset: int = 0,
            limit: int = 1 << 30) -> int | None:
    """Refuse `names` in this process for good: the sandboxed worker's arming, done once,
    before the student's source is imported, from the forbidden names the trusted side sent.

    Nothing is kept that could take a refusal back: the registration's handle is held only by
    a reference count that no Python object owns (no variable, list or closure leads to it),
    and the replaced code of a library function is dropped. Returns None, or the index of what
    could not be installed (`evidence.UNARMED`), for the worker to end on before any student
    code runs."""
    import torch

    names = tuple(names)
    table, op_plan, targets = _tables(names)
    registrations, swaps = _plan(names, on_hit, offset, limit, targets, table, op_plan)
    if registrations:
        make = getattr(torch._C, "_dispatch_library", None)
        if make is None:
            return 0
        try:
            lib = make("IMPL", "aten", "", "<forbidden routine>", 0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "overriding a previously registered kernel"
                for overload, dispatch_key, kernel in registrations:
                    lib.impl(overload, dispatch_key, kernel, False)
            import ctypes

            ctypes.pythonapi.Py_IncRef(ctypes.py_object(lib))
            del lib
        except Exception:  # noqa: BLE001 - whatever the registration raised: fail closed
            return 1
    for where, attr, value in swaps:
        try:
            setattr(where, attr, value)
        except (AttributeError, TypeError, ValueError):
            return 2
    return None


def make_guard(on_hit: Callable[[int], Any], offset: int = 0, limit: int = 1 << 30,
               names: Iterable[str] = ()) -> tuple[Callable[[list[str]], None],
                                                  Callable[[], None], Callable[[], list[str]]]:
    """`(arm, disarm, problems)` for the student's own process (`autograder check`, otter),
    where a question's refusals hold while its calls run: `arm(names)` refuses `names` (a
    call's forbidden routines) until `disarm()` (arming the names already armed costs
    nothing); a refusal calls `on_hit(offset + index)` (`index` into `names`, at most
    `limit - 1`). `problems()` says what could not be refused (an older torch without the
    registration API, say), so that the result can say so instead of the check crashing.
    The sandboxed worker never disarms: it uses `install`.

    Everything arming needs is taken here and kept in this closure: the operator table and
    each operator's overloads and keys, the library functions of `names`, torch's
    registration entry point and the built-ins used."""
    import torch

    _getattr, _setattr, _isinstance, _tuple = getattr, setattr, isinstance, tuple
    make = getattr(torch._C, "_dispatch_library", None)
    python_library = torch.library.Library
    catch_warnings, simplefilter = warnings.catch_warnings, warnings.simplefilter
    table, op_plan, targets = _tables(names)
    plans: dict[tuple[str, ...], tuple[list, list]] = {}   # names -> (registrations, swaps)
    problems: list[str] = []
    handle: list[Any] = []                  # the armed registration, if any
    swapped: list[tuple[Any, str, Any]] = []   # (object, attribute, old value)
    armed: list[tuple[str, ...]] = []

    def library():
        if make is not None:
            try:
                return make("IMPL", "aten", "", "<forbidden routine>", 0)
            except TypeError:      # an older signature
                pass
        return python_library("aten", "IMPL")

    def plan(names: tuple[str, ...]) -> tuple[list, list]:
        if names not in plans:
            # Library implementations the student's process has imported by now count.
            plans[names] = _plan(names, on_hit, offset, limit, targets, table, op_plan,
                                 load=False)
        return plans[names]

    def arm(names: list[str]) -> None:
        key = _tuple(names)
        if armed and armed[0] == key:
            return
        disarm()
        armed.append(key)
        registrations, swaps = plan(key)
        if registrations:
            try:
                lib = library()
                handle.append(lib)
                old_api = _isinstance(lib, python_library)
                with catch_warnings():
                    simplefilter("ignore")  # "overriding a previously registered kernel"
                    for overload, dispatch_key, kernel in registrations:
                        if old_api:
                            lib.impl(overload, kernel, dispatch_key)
                        else:
                            lib.impl(overload, dispatch_key, kernel, False)
            except Exception as e:  # noqa: BLE001 - an older torch: say so, do not crash
                note = f"the dispatch-level check could not be installed ({type(e).__name__})"
                if note not in problems:
                    problems.append(note)
        for where, attr, value in swaps:
            try:
                old = _getattr(where, attr)
                _setattr(where, attr, value)
                swapped.append((where, attr, old))
            except (AttributeError, TypeError, ValueError):
                pass       # a built-in type's attribute cannot be replaced

    def disarm() -> None:
        armed.clear()
        while handle:
            lib = handle.pop()
            if _isinstance(lib, python_library):
                lib._destroy()
            else:
                lib.reset()
        while swapped:
            where, attr, old = swapped.pop()
            _setattr(where, attr, old)

    def report() -> list[str]:
        return list(problems)

    return arm, disarm, report
