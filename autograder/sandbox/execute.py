"""Run one call of a student function and record everything a check needs to judge it.

This module runs wherever student code runs: inside the sandboxed worker during grading, and in
the student's own process for `autograder check` and otter's in-process tools. It never decides a
verdict; it returns an *outcome*: the output, gradients of a given upstream gradient with respect
to every differentiable input, which inputs were changed in place, which forbidden library calls
happened, which other student functions were called, and the student's own error, if any.

Inputs may be torch tensors or NumPy arrays (or both, nested in tuples, lists and dicts).
Gradients are computed only for floating-point torch tensors: a call on NumPy arrays has none.
Forbidden routines are refused where every route to them meets (`guard.py`): at torch's
dispatcher (the aten operators that compute them, and library code performing a routine's
signature), Python-level library functions (SciPy's, NumPy's) in the function object itself,
and torch's compilers that run past the dispatcher; what computes each routine is the
assignment's data (`routines.py`). The autograd graph of the result (`autograd.<Node>` names)
is a second signal. In this process a refusal raises and is listed in the outcome with how it
was refused; the sandboxed worker arms its own guard, whose refusal ends the worker.
"""
from __future__ import annotations

import errno
import importlib
import linecache
import os
import sys
import traceback
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np
import torch

from .evidence import COMPILER_NAMES
from .guard import isolated, make_guard
from .routines import Plan, is_python_name
from .wire import Record, record_fields

# The whole engine (this package's parent): its frames are never the student's.
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIB_DIRS = tuple({os.path.dirname(os.__file__), sys.prefix, sys.base_prefix, sys.exec_prefix})
MAX_MESSAGE = 400
# The file names of code the engine builds (`guard.isolated`, the refusing code).
_ENGINE_CODE = ("<grader>", "<forbidden routine>")


# ----------------------------------------------------------------- inputs and paths

class Field(str):
    """A step of a path that names a field of a namedtuple or a dataclass (`.mean`), where a
    plain `str` step is a dict's key (`["mean"]`) and an `int` an item's position."""

    __slots__ = ()


def iter_items(value: Any):
    """(step, item) for each item of a container: tuples and lists by position, dicts by key,
    namedtuples and dataclasses (and their `Record`s) by field; nothing for anything else."""
    if isinstance(value, Record):
        return [(Field(k), v) for k, v in value.fields.items()]
    fields = record_fields(value) if not isinstance(value, (list, dict)) else None
    if fields is not None:
        return [(Field(k), v) for k, v in fields]
    if isinstance(value, (tuple, list)):
        return list(enumerate(value))
    if isinstance(value, dict):
        return list(value.items())
    return []


def steps_to_data(path: tuple) -> list[list]:
    """A path as JSON data: ["i", 1] an item, ["k", "w"] a dict's key, ["f", "m"] a field."""
    return [["f", str(p)] if isinstance(p, Field) else ["i", p] if isinstance(p, int)
            else ["k", str(p)] for p in path]


def steps_from_data(data: Any) -> tuple:
    return tuple(Field(v) if k == "f" else int(v) if k == "i" else str(v) for k, v in data)


def step_into(value: Any, step: Any) -> Any:
    """The item of `value` at one step of a path (see `Field`): a field of a record, an item of
    a tuple or list, a dict's key; anything else (an array's row) is no such item."""
    if isinstance(step, Field):
        if isinstance(value, Record):
            return value.fields[step]
        if record_fields(value) is None:
            raise TypeError(f"{type(value).__name__} has no fields")
        return getattr(value, step)
    if isinstance(step, int) and isinstance(value, (tuple, list)) or \
            isinstance(step, str) and isinstance(value, dict):
        return value[step]
    raise TypeError(f"{type(value).__name__} has no item {step!r}")


def iter_arrays(value: Any, path: tuple = ()):
    """Yield (path, array) for every torch tensor or NumPy array inside nested containers
    (tuples, lists, dicts, namedtuples, dataclasses)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        yield path, value
        return
    for step, item in iter_items(value):
        yield from iter_arrays(item, path + (step,))


def iter_leaves(value: Any, path: tuple = ()):
    """Yield (path, tensor) for every torch tensor inside nested tuples/lists/dicts."""
    return ((p, t) for p, t in iter_arrays(value, path) if isinstance(t, torch.Tensor))


def path_key(path: tuple) -> str:
    return "/".join(str(p) for p in path)


def _clone_tree(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if isinstance(value, (tuple, list)):
        return type(value)(_clone_tree(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone_tree(v) for k, v in value.items()}
    return value


def _prepare_inputs(args: tuple, kwargs: dict, want_grad: bool):
    """Fresh copies of the inputs; floating-point tensors become leaves that require grad."""
    args, kwargs = _clone_tree(args), _clone_tree(kwargs)
    diff = []
    if want_grad:
        for path, t in list(iter_leaves((args, kwargs))):
            if t.is_floating_point():
                t.requires_grad_(True)
                diff.append((path, t))
    return args, kwargs, diff


# ----------------------------------------------------------------- forbidden calls

def _graph_nodes(output: Any, limit: int = 20000) -> set[str]:
    """Names of the autograd nodes behind `output`: how a result was computed (a second signal
    beside the dispatcher check, for the `autograd.<Node>` names question files declare)."""
    stack = [t.grad_fn for _, t in iter_leaves(output) if t.grad_fn is not None]
    seen: dict[int, Any] = {}    # keeps the nodes alive, so their ids stay unique
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend([fn for fn, _ in node.next_functions])
    return {node.name() for node in seen.values()}


def is_tripwire_name(name: str) -> bool:
    """Forbidden entries outside torch (`package.module.function`): refused where the function
    itself is (`guard.py`), since they have no dispatcher."""
    return is_python_name(name)


def tripwire_module(name: str) -> str | None:
    """The importable module part of a dotted name ("scipy.special.softmax" -> "scipy.special")."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - not a module (or not installed): try a shorter prefix
            continue
        return module
    return None


class ForbiddenRoutine(RuntimeError):
    """Raised in the student's own process where a forbidden routine was reached."""


_in_process: dict[str, Any] = {}


def _in_process_guard():
    """The guard of the student's own process (`autograder check`, otter): a refusal records the
    routine for the outcome and raises. In the sandboxed worker the worker arms its own guard,
    whose refusal ends the process instead (`worker.py`)."""
    if "arm" not in _in_process:
        def refuse(code: tuple[str, int]):
            kind, index = code
            names, hits, how = _in_process["names"], _in_process["hits"], _in_process["how"]
            if kind == "compiler":
                name = COMPILER_NAMES[index]
            else:
                name = names[index] if 0 <= index < len(names) else "a forbidden routine"
            if name not in hits:
                hits.append(name)
                how.append(kind)
            raise ForbiddenRoutine(f"{name} (or a route to the same library routine) is not "
                                   "allowed in this question")

        _in_process["arm"], _in_process["disarm"], _in_process["problems"] = make_guard(
            refuse, STOP_CODES)
    return _in_process["arm"], _in_process["disarm"], _in_process["problems"]


def guard_problems() -> list[str]:
    """What this process's guard could not install, if it was used."""
    return _in_process["problems"]() if "problems" in _in_process else []


# ----------------------------------------------------------------- call tracing

_TRACED = ('def traced(*args, **kwargs):\n    "@note"("@name")\n'
           '    return "@function"(*args, **kwargs)\n')


def _trace_calls(func: Callable, api: list[str], called: list[str]):
    """Temporarily wrap the student's other API functions to record which ones `func` calls.

    The wrappers sit in the student's own globals, so they are built holding nothing of the
    engine's (`guard.isolated`): the function they wrap, its name and a dict of names."""
    g = getattr(func, "__globals__", None)
    if not isinstance(g, dict):
        return lambda: None
    saved = {}
    seen: dict[str, None] = {}
    for name in api:
        f = g.get(name)
        if callable(f) and f is not func:
            saved[name] = f
            traced = isolated(_TRACED, {"@note": seen.setdefault, "@name": name,
                                        "@function": f}, name)
            # inspect.signature of the student's own function (a helper may ask) sees theirs.
            traced.__wrapped__ = f
            g[name] = traced

    def restore():
        for name, f in saved.items():
            g[name] = f
        called.extend(n for n in seen if n not in called)

    return restore


# ----------------------------------------------------------------- errors

def _is_student_frame(filename: str) -> bool:
    if not filename or filename.startswith(_ENGINE_DIR) or filename in _ENGINE_CODE:
        return False
    if filename.startswith("<frozen") or "site-packages" in filename:
        return False
    return not any(filename.startswith(d + os.sep) for d in _LIB_DIRS if d)


def describe_error(exc: BaseException) -> dict:
    """The student's view of an exception: their own file, line and code, and the message."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_student_frame(f.filename)]
    info: dict[str, Any] = {
        "type": type(exc).__name__[:80],
        "message": _clip(str(exc)),
        "file": None, "line": None, "code": None, "function": None,
    }
    if frames:
        last = frames[-1]
        info.update(file=os.path.basename(last.filename)[:120], line=last.lineno,
                    code=_clip((last.line or linecache.getline(last.filename, last.lineno)).strip()),
                    function=last.name[:80])
    return info


def _clip(s: str, limit: int = MAX_MESSAGE) -> str:
    s = s.replace("\x00", "")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    # A full scratch tmpfs or shared-memory cap (ENOSPC), no memory for a mapping (ENOMEM).
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.ENOMEM, errno.EDQUOT):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "DefaultCPUAllocator" in text
        or "not enough memory" in text)


# ----------------------------------------------------------------- the call

def run_call(func: Callable, args: tuple, kwargs: dict, *, upstream: Any = None,
             want_grad: bool = False, forbidden: list[str] = (), api: list[str] = (),
             guard: bool = True, plans: list[Plan] | None = None) -> dict:
    """Call `func(*args, **kwargs)` on fresh copies of the inputs and return its outcome.

    `upstream` is the gradient of the loss with respect to each tensor of the expected output
    (same nesting); when it is given and `want_grad`, the outcome holds the gradient reaching
    each floating-point input, or None where none reaches it. With `guard`, the `forbidden`
    routines are refused during the call and its backward pass (`guard.py`, each name as its
    plan in `plans` says), and the outcome lists those reached and how (`refused_how`: "routine",
    "library" or "compiler"); the sandboxed worker arms its own guard and passes False.
    """
    hits: list[str] = []
    how: list[str] = []
    if not (guard and forbidden):
        return _run_call(func, args, kwargs, upstream, want_grad, forbidden, api, hits, how)
    arm, disarm, problems = _in_process_guard()
    _in_process["names"], _in_process["hits"], _in_process["how"] = list(forbidden), hits, how
    if plans is None:     # no table: what the installed libraries give for each name
        from .routines import Table

        plans = [Table().plan(n) for n in forbidden]
    arm(list(forbidden), list(plans))
    dynamo = sys.modules.get("torch._dynamo.config")
    was = getattr(dynamo, "disable", None)
    if dynamo is not None:
        # torch.compile's compiled code would compute past the refusals: run as written, as
        # in the grader's worker (`bypass.py`).
        dynamo.disable = True
    try:
        outcome = _run_call(func, args, kwargs, upstream, want_grad, forbidden, api, hits, how)
    finally:
        if dynamo is not None:
            dynamo.disable = was
        disarm()
    if problems():
        outcome["unchecked"] = problems()[0]
    return outcome


def _run_call(func: Callable, args: tuple, kwargs: dict, upstream: Any, want_grad: bool,
              forbidden, api, hits: list[str], how: list[str] | None = None) -> dict:
    how = how if how is not None else []
    chained = _chained_inputs(args, kwargs)
    call_args, call_kwargs, diff = _prepare_inputs(args, kwargs, want_grad)
    # What the inputs held before the call: the originals, which the call never sees (it gets
    # the fresh copies above), so no second copy is needed to tell what it changed.
    before = (args, kwargs)
    given = _identities((call_args, call_kwargs))
    outcome: dict[str, Any] = {"status": "ok", "output": None, "grads": None, "grad_error": None,
                               "mutated": [], "forbidden": hits, "refused_how": how,
                               "called": [], "error": None}
    called: list[str] = []
    node_names = {n[len("autograd."):]: n for n in forbidden if n.startswith("autograd.")}
    for at, chain in chained:
        # An input that is the output of another of the student's functions, made here from
        # fresh copies of its inputs (never sent to the grader and back).
        fed = _feed_chained(chain, api, called, outcome)
        if fed is _FAILED:
            outcome["called"] = called
            return outcome
        call_args, call_kwargs = _with_input(at, fed, call_args, call_kwargs)
    restore = _trace_calls(func, list(api), called)
    try:
        output = func(*call_args, **call_kwargs)
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything, even SystemExit
        _record_error(outcome, exc)
        output = None
    finally:
        restore()
    if node_names and output is not None:
        for node in sorted(_graph_nodes(output) & node_names.keys()):
            if node_names[node] not in hits:
                hits.append(node_names[node])
                how.append("routine")
    outcome["called"] = called
    changes = input_changes(before, (call_args, call_kwargs), given,
                            skip={at for at, _ in chained})
    outcome["mutated"] = [c["path"] for c in changes]
    structural = [c for c in changes if c["how"] != "in_place"]
    if structural:
        outcome["changes"] = structural
    if outcome["status"] != "ok":
        return outcome
    outcome["output"] = output
    # The backward pass runs under the same refusals: it runs the student's code too (a custom
    # autograd.Function's backward).
    if want_grad and upstream is not None and diff:
        outcome["grads"], outcome["grad_error"], unconnected = _gradients(output, upstream, diff)
        if unconnected:
            outcome["unconnected"] = unconnected
    return outcome


def _record_error(outcome: dict, exc: BaseException) -> None:
    """The student's exception, as the outcome's status and error."""
    outcome["error"] = describe_error(exc)
    if isinstance(exc, NotImplementedError):
        outcome["status"] = "not_implemented"
    elif is_memory_error(exc):
        outcome["status"] = "memory"
    else:
        outcome["status"] = "error"
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        outcome["error"]["message"] = _clip(f"{type(exc).__name__}({exc})")


# ----------------------------------------------------------------- chained inputs

class Chained:
    """An input that is the output of another call, made where the student's code runs:
    `function(*args, **kwargs)`, then the item at `pick` of its output (a backward pass fed the
    student's own forward cache). `function` is a callable in the process that runs it, and
    `name` the student's function's name."""

    def __init__(self, name: str, function: Any, args: tuple, kwargs: dict, pick: tuple = ()):
        self.name, self.function = name, function
        self.args, self.kwargs, self.pick = tuple(args), dict(kwargs), tuple(pick)

    def with_function(self, function: Any) -> "Chained":
        return Chained(self.name, function, self.args, self.kwargs, self.pick)

    def digest_parts(self) -> tuple:
        """What identifies it in a call's digest (`memo.fingerprint`)."""
        return ("chained", self.name, self.args, self.kwargs,
                tuple((type(p).__name__, str(p)) for p in self.pick))


def with_chained_functions(args: tuple, kwargs: dict, lookup: Callable[[str], Any]
                           ) -> tuple[tuple, dict]:
    """The arguments with each chained input's function replaced by `lookup(name)`: the
    reference's (the expected outcome), a variant's (naming a mistake), or None (a record kept
    in the trusted process, which never calls the student's code)."""
    args = tuple(a.with_function(lookup(a.name)) if isinstance(a, Chained) else a for a in args)
    kwargs = {k: v.with_function(lookup(v.name)) if isinstance(v, Chained) else v
              for k, v in kwargs.items()}
    return args, kwargs


def _chained_inputs(args: tuple, kwargs: dict) -> list[tuple[tuple, Chained]]:
    """The chained inputs among the arguments themselves (not nested), with their paths."""
    found = [((0, i), a) for i, a in enumerate(args) if isinstance(a, Chained)]
    found += [((1, k), v) for k, v in kwargs.items() if isinstance(v, Chained)]
    return found


_FAILED = object()


def _feed_chained(chain: Chained, api, called: list[str], outcome: dict) -> Any:
    """Run the chained call and return the item it feeds; on failure, make `outcome` say so
    (its status, and `chained`) and return `_FAILED`."""
    if chain.name not in called:
        called.append(chain.name)
    if not callable(chain.function):
        outcome.update(status="error", chained={"function": chain.name, "missing": ""},
                       error={"type": "NameError", "message": f"{chain.name} is not defined",
                              "file": None, "line": None, "code": None, "function": None})
        return _FAILED
    first_args, first_kwargs, _ = _prepare_inputs(chain.args, chain.kwargs, False)
    restore = _trace_calls(chain.function, list(api), called)
    try:
        value = chain.function(*first_args, **first_kwargs)
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything
        _record_error(outcome, exc)
        outcome["chained"] = {"function": chain.name, "missing": ""}
        return _FAILED
    finally:
        restore()
    for step in chain.pick:
        try:
            value = step_into(value, step)
        except Exception:  # noqa: BLE001 - a wrong structure (or an attribute that raises)
            shown = "".join(f".{p}" if isinstance(p, Field) else f"[{p!r}]" for p in chain.pick)
            outcome.update(status="error", chained={"function": chain.name, "missing": shown},
                           error={"type": "", "message": "", "file": None, "line": None,
                                  "code": None, "function": None})
            return _FAILED
    return value


def _with_input(at: tuple, value: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments with `value` in place of the chained input at `at`."""
    if at[0] == 0:
        args = tuple(value if i == at[1] else a for i, a in enumerate(args))
    else:
        kwargs = {**kwargs, at[1]: value}
    return args, kwargs


# ----------------------------------------------------------------- changed inputs

def _identities(value: Any, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """{path: id} of every value inside the inputs handed to the student, containers too."""
    out = {} if out is None else out
    out[path] = id(value)
    if isinstance(value, (tuple, list, dict)):
        for step, item in (enumerate(value) if not isinstance(value, dict) else value.items()):
            _identities(item, path + (step,), out)
    return out


def input_changes(before: Any, after: Any, given: dict[tuple, int],
                  skip: set = frozenset()) -> list[dict]:
    """How the inputs differ from `before` (what they held before the call: the originals of
    the copies the call was handed) once the call is over: each change as {"path", "how"},
    "how" being "in_place" (an array's values changed), "rebound" (an item of a dict or list
    replaced by another value), "removed" or "added" (keys of a dict, listed in "keys"),
    "resized" (a list, "before" and "after" its length).
    `given`: the identities of what the student was handed (`_identities`). Never raises:
    what the student left in their inputs is compared, not trusted."""
    changes: list[dict] = []
    _compare_input(before, after, (), given, skip, changes)
    return changes[:MAX_CHANGES]


MAX_CHANGES = 32


def _compare_input(b: Any, a: Any, path: tuple, given: dict, skip: set, out: list) -> None:
    if path in skip or len(out) >= MAX_CHANGES:
        return
    if len(path) > 1 and id(a) != given.get(path):
        # Another value in this place (the root tuples are the grader's own): the student
        # assigned to an item of a dict or list they were given.
        if not _same_tree(b, a):
            out.append({"path": path_key(path), "how": "rebound"})
        return
    if isinstance(b, (torch.Tensor, np.ndarray)):
        if not _same(b, a):
            out.append({"path": path_key(path), "how": "in_place"})
        return
    if isinstance(b, dict) and isinstance(a, dict):
        removed = [str(k) for k in b if k not in a]
        added = [str(k) for k in list(a)[:MAX_CHANGES * 4] if k not in b]
        if removed:
            out.append({"path": path_key(path), "how": "removed", "keys": removed[:8]})
        if added:
            out.append({"path": path_key(path), "how": "added", "keys": added[:8]})
        for k in b:
            if k in a:
                _compare_input(b[k], a[k], path + (k,), given, skip, out)
        return
    if isinstance(b, (tuple, list)) and isinstance(a, (tuple, list)):
        if len(a) != len(b):
            out.append({"path": path_key(path), "how": "resized", "before": len(b),
                        "after": len(a)})
        for i, (x, y) in enumerate(zip(b, a)):
            _compare_input(x, y, path + (i,), given, skip, out)


def _same_tree(b: Any, a: Any) -> bool:
    """Whether `a` holds exactly what `b` held (arrays bit for bit, containers item by item)."""
    try:
        if isinstance(b, (torch.Tensor, np.ndarray)):
            return _same(b, a)
        if isinstance(b, dict):
            return type(a) is dict and a.keys() == b.keys() and \
                all(_same_tree(b[k], a[k]) for k in b)
        if isinstance(b, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and \
                all(_same_tree(x, y) for x, y in zip(b, a))
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - an object of the student's whose == misbehaves
        return False


_SAME_WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same(a: torch.Tensor | np.ndarray, b: Any) -> bool:
    """Is `b` bit for bit the tensor `a` was (NaN where NaN was included)?"""
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach(), b.detach()
    if a.is_floating_point() and not a.is_complex():
        # Compare the bits (one operation, NaN-safe) instead of the values.
        as_int = _SAME_WIDTH_INT[a.element_size()]
        return bool(torch.equal(a.contiguous().view(as_int), b.contiguous().view(as_int)))
    return bool(torch.equal(a, b))


def _gradients(output: Any, upstream: Any, diff: list
               ) -> tuple[dict | None, str | None, list[str]]:
    """The gradients reaching the inputs in `diff`, an error (or None), and the paths of the
    output's tensors that had an upstream gradient but no autograd graph (`unconnected`)."""
    pairs, unconnected = [], []
    for path, up in iter_leaves(upstream):
        try:
            got = _get_out(output, path)
        except Exception:  # noqa: BLE001 - a wrong structure, or an attribute that raises
            return None, "output structure", []
        if not isinstance(got, torch.Tensor) or got.shape != up.shape:
            return None, "output shape", []
        if got.requires_grad:
            pairs.append((got, up.to(got.dtype) if got.is_floating_point() else up))
        else:
            unconnected.append(path_key(path))
    grads: dict[str, Any] = {path_key(p): None for p, _ in diff}
    if not pairs:
        return grads, "detached", unconnected
    try:
        # The vector-Jacobian product with the upstream gradients, by autograd's engine itself:
        # no arithmetic of the grader's own runs while the question's routines are refused (a
        # loss `sum(output * upstream)` would meet a forbidden `torch.mul`), and it spares
        # `autograd.grad`'s lazy import of the symbolic-shapes machinery (sympy, ~0.5 s), which
        # explicit gradients there trigger. Shapes were checked above.
        result = _vjp(tuple(g for g, _ in pairs), tuple(u for _, u in pairs),
                      tuple(t for _, t in diff))
    except BaseException as exc:  # noqa: BLE001
        return None, "backward failed: " + _clip(f"{type(exc).__name__}: {exc}", 200), []
    for (p, _), g in zip(diff, result):
        grads[path_key(p)] = None if g is None else g.detach()
    return grads, None, unconnected


def _vjp(outputs: tuple, upstreams: tuple, inputs: tuple) -> tuple:
    """Gradients reaching `inputs` of `outputs` weighted by `upstreams` (None where none does)."""
    from torch.autograd.variable import Variable

    engine = getattr(Variable, "_execution_engine", None)
    if engine is None:     # not this torch's layout: the public API (slower on first use)
        return torch.autograd.grad(outputs, inputs, grad_outputs=upstreams, allow_unused=True)
    return engine.run_backward(outputs, upstreams, False, False, inputs, True, False)


def index_into(value: Any, step: Any) -> Any:
    """The item of `value` at one step of a path as indexing finds it: a field by name, else
    `value[step]` (so a tensor's row where an output of another structure has one)."""
    if isinstance(step, Field):
        return value.fields[step] if isinstance(value, Record) else getattr(value, step)
    if isinstance(step, str) and not isinstance(value, Mapping):
        # A key where the output has no dict: torch would read the key as a sequence of
        # indices (deprecated, and another meaning in later versions).
        raise KeyError(step)
    return value[step]


def _get_out(output, path):
    """The output's tensor where the upstream gradient has one (a student's output of another
    structure is told by what indexing finds, "output shape" or "output structure", as the
    recorded outcomes of known mistakes were)."""
    value = output
    for p in path:
        value = index_into(value, p)
    return value


# The engine's own frames around a call of the student's function: a walk of the stack for
# library code computing a routine stops there (`observe.py`). A chained input's call is one of
# them: the student's function that makes it is called from `_feed_chained`.
STOP_CODES = tuple(f.__code__ for f in (run_call, _run_call, _feed_chained, _gradients, _vjp))
