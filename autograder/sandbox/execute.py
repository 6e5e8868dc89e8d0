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
import functools
import importlib
import linecache
import os
import sys
import threading
import traceback
from typing import Any, Callable

import numpy as np
import torch

from .evidence import COMPILER_NAMES
from .guard import isolated, make_guard
from .routines import Plan, is_python_name

# The whole engine (this package's parent): its frames are never the student's.
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIB_DIRS = tuple({os.path.dirname(os.__file__), sys.prefix, sys.base_prefix, sys.exec_prefix})
MAX_MESSAGE = 400
# The file names of code the engine builds (`guard.isolated`, the refusing code).
_ENGINE_CODE = ("<grader>", "<forbidden routine>")


# ----------------------------------------------------------------- inputs and paths

def iter_arrays(value: Any, path: tuple = ()):
    """Yield (path, array) for every torch tensor or NumPy array inside nested containers."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from iter_arrays(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from iter_arrays(v, path + (k,))


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
    call_args, call_kwargs, diff = _prepare_inputs(args, kwargs, want_grad)
    before = _clone_tree((call_args, call_kwargs))
    outcome: dict[str, Any] = {"status": "ok", "output": None, "grads": None, "grad_error": None,
                               "mutated": [], "forbidden": hits, "refused_how": how,
                               "called": [], "error": None}
    called: list[str] = []
    node_names = {n[len("autograd."):]: n for n in forbidden if n.startswith("autograd.")}
    restore = _trace_calls(func, list(api), called)
    try:
        output = func(*call_args, **call_kwargs)
    except BaseException as exc:  # noqa: BLE001 - student code may raise anything, even SystemExit
        outcome["error"] = describe_error(exc)
        if isinstance(exc, NotImplementedError):
            outcome["status"] = "not_implemented"
        elif is_memory_error(exc):
            outcome["status"] = "memory"
        else:
            outcome["status"] = "error"
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            outcome["error"]["message"] = _clip(f"{type(exc).__name__}({exc})")
        output = None
    finally:
        restore()
    if node_names and output is not None:
        for node in sorted(_graph_nodes(output) & node_names.keys()):
            if node_names[node] not in hits:
                hits.append(node_names[node])
                how.append("routine")
    outcome["called"] = called
    outcome["mutated"] = [path_key(p) for p, t in iter_arrays(before)
                          if not _same(t, _get(call_args, call_kwargs, p))]
    if outcome["status"] != "ok":
        return outcome
    outcome["output"] = output
    # The backward pass runs under the same refusals: it runs the student's code too (a custom
    # autograd.Function's backward).
    if want_grad and upstream is not None and diff:
        outcome["grads"], outcome["grad_error"] = _gradients(output, upstream, diff)
    return outcome


def _get(args, kwargs, path):
    value: Any = (args, kwargs)
    for p in path:
        value = value[p]
    return value


_SAME_WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _same(a: torch.Tensor | np.ndarray, b: Any) -> bool:
    """Is `b` bit for bit the tensor `a` was (NaN where NaN was included)?"""
    if isinstance(a, np.ndarray):
        if not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    b = b.detach()
    if a.is_floating_point() and not a.is_complex():
        # Compare the bits (one operation, NaN-safe) instead of the values.
        as_int = _SAME_WIDTH_INT[a.element_size()]
        return bool(torch.equal(a.contiguous().view(as_int), b.contiguous().view(as_int)))
    return bool(torch.equal(a, b))


def _gradients(output: Any, upstream: Any, diff: list) -> tuple[dict | None, str | None]:
    pairs = []
    for path, up in iter_leaves(upstream):
        try:
            got = _get_out(output, path)
        except (KeyError, IndexError, TypeError):
            return None, "output structure"
        if not isinstance(got, torch.Tensor) or got.shape != up.shape:
            return None, "output shape"
        if got.requires_grad:
            pairs.append((got, up.to(got.dtype) if got.is_floating_point() else up))
    grads: dict[str, Any] = {path_key(p): None for p, _ in diff}
    if not pairs:
        return grads, "detached"
    try:
        # The vector-Jacobian product with the upstream gradients, by autograd's engine itself:
        # no arithmetic of the grader's own runs while the question's routines are refused (a
        # loss `sum(output * upstream)` would meet a forbidden `torch.mul`), and it spares
        # `autograd.grad`'s lazy import of the symbolic-shapes machinery (sympy, ~0.5 s), which
        # explicit gradients there trigger. Shapes were checked above.
        result = _vjp(tuple(g for g, _ in pairs), tuple(u for _, u in pairs),
                      tuple(t for _, t in diff))
    except BaseException as exc:  # noqa: BLE001
        return None, "backward failed: " + _clip(f"{type(exc).__name__}: {exc}", 200)
    for (p, _), g in zip(diff, result):
        grads[path_key(p)] = None if g is None else g.detach()
    return grads, None


def _vjp(outputs: tuple, upstreams: tuple, inputs: tuple) -> tuple:
    """Gradients reaching `inputs` of `outputs` weighted by `upstreams` (None where none does)."""
    from torch.autograd.variable import Variable

    engine = getattr(Variable, "_execution_engine", None)
    if engine is None:     # not this torch's layout: the public API (slower on first use)
        return torch.autograd.grad(outputs, inputs, grad_outputs=upstreams, allow_unused=True)
    return engine.run_backward(outputs, upstreams, False, False, inputs, True, False)


def _get_out(output, path):
    value = output
    for p in path:
        value = value[p]
    return value


# The engine's own frames around a call of the student's function: a walk of the stack for
# library code computing a routine stops there (`observe.py`).
STOP_CODES = tuple(f.__code__ for f in (run_call, _run_call, _gradients, _vjp))
