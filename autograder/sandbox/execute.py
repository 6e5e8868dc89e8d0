"""Run one call of a student function and record everything a check needs to judge it.

This module runs wherever student code runs: inside the sandboxed worker during grading, and in
the student's own process for `autograder check` and otter's in-process tools. It never decides a
verdict; it returns an *outcome*: the output, gradients of a given upstream gradient with respect
to every differentiable input, which inputs were changed in place, which forbidden library calls
happened, which other student functions were called, and the student's own error, if any.

Inputs may be torch tensors or NumPy arrays (or both, nested in tuples, lists and dicts).
Gradients are computed only for floating-point torch tensors: a call on NumPy arrays has none.
Forbidden calls are seen three ways: torch functions through a torch function mode, library
routines through the autograd graph (`autograd.<Node>`), and any other Python-level function
(`package.module.function`, e.g. `scipy.special.softmax`) through a *tripwire*: the attribute is
replaced by a wrapper that notes the call while a call that forbids it is running. Tripwires are
installed before the student's module is imported (`install_tripwires`), so that
`from package import function` binds the wrapper too.
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
from torch.overrides import TorchFunctionMode

# The whole engine (this package's parent): its frames are never the student's.
_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIB_DIRS = tuple({os.path.dirname(os.__file__), sys.prefix, sys.base_prefix, sys.exec_prefix})
MAX_MESSAGE = 400


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

def _resolve(dotted: str):
    obj: Any = torch
    parts = dotted.split(".")
    if parts[0] != "torch":
        return None
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


class _ForbiddenFunctions(TorchFunctionMode):
    """Notes calls of forbidden torch functions and Tensor methods (public API level)."""

    def __init__(self, names: list[str], hits: list[str]):
        super().__init__()
        self.targets = {}
        for n in names:
            obj = _resolve(n)
            if obj is not None:
                self.targets[id(obj)] = n
        self.hits = hits

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = self.targets.get(id(func))
        if name and name not in self.hits:
            self.hits.append(name)
        return func(*args, **(kwargs or {}))


def _graph_nodes(output: Any, limit: int = 20000) -> set[str]:
    """Names of the autograd nodes behind `output`: how a result was computed.

    This catches library calls that bypass the public API (e.g. `torch.ops.aten._softmax`),
    which a function mode cannot see, at the cost of a walk over a small graph.
    """
    stack = [t.grad_fn for _, t in iter_leaves(output) if t.grad_fn is not None]
    seen: dict[int, Any] = {}    # keeps the nodes alive, so their ids stay unique
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend([fn for fn, _ in node.next_functions])
    return {node.name() for node in seen.values()}


TORCH_PREFIXES = ("torch.", "autograd.")


def is_tripwire_name(name: str) -> bool:
    """Forbidden entries outside torch (`package.module.function`) are caught by tripwires."""
    return "." in name and not name.startswith(TORCH_PREFIXES)


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


_armed = threading.local()
# name -> (original object, wrapper); a wrapper stays installed and notes calls only when armed
_tripwires: dict[str, tuple[Any, Callable]] = {}


def _make_tripwire(name: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def tripwire(*args, **kwargs):
        names = getattr(_armed, "names", None)
        if names and name in names and name not in _armed.hits:
            _armed.hits.append(name)
        return original(*args, **kwargs)

    tripwire.__autograder_tripwire__ = name
    del tripwire.__wrapped__      # functools.wraps would hand the original to anyone who asks
    return tripwire


def install_tripwires(names) -> list[str]:
    """Replace each forbidden Python-level function by a tripwire, once per process.

    Installed at the named place (`scipy.special.softmax`) and, when it is the same object, where
    the function is defined (`scipy.special._logsumexp.softmax`). Names that do not resolve to a
    callable attribute of an importable module (the package is not installed, say) are skipped:
    code cannot call what is not there. Returns the names that have a tripwire.
    """
    done = []
    for name in names:
        if not is_tripwire_name(name):
            continue
        if name in _tripwires:
            done.append(name)
            continue
        module_name = tripwire_module(name)
        if module_name is None:
            continue
        owner: Any = sys.modules[module_name]
        attrs = name[len(module_name) + 1:].split(".")
        try:
            for a in attrs[:-1]:
                owner = getattr(owner, a)
            original = getattr(owner, attrs[-1])
        except AttributeError:
            continue
        if getattr(original, "__autograder_tripwire__", None) or not callable(original):
            continue
        wrapper = _make_tripwire(name, original)
        try:
            setattr(owner, attrs[-1], wrapper)
        except (AttributeError, TypeError):
            continue            # a built-in type's method cannot be replaced
        home = sys.modules.get(getattr(original, "__module__", None) or "")
        short = getattr(original, "__name__", None)
        if home is not None and short and getattr(home, short, None) is original:
            try:
                setattr(home, short, wrapper)
            except (AttributeError, TypeError):
                pass
        _tripwires[name] = (original, wrapper)
        done.append(name)
    return done


def _arm_tripwires(func: Callable, names: list[str], hits: list[str]):
    """Note calls of `names` during one call; also swap the student's own references to the
    originals (bound before the tripwires existed, e.g. in a notebook) for the wrappers."""
    install_tripwires(names)
    wires = {n: _tripwires[n] for n in names if n in _tripwires}
    g = getattr(func, "__globals__", None)
    swapped = {}
    if isinstance(g, dict) and wires:
        by_id = {id(original): wrapper for original, wrapper in wires.values()}
        for key, value in list(g.items()):
            wrapper = by_id.get(id(value))
            if wrapper is not None:
                swapped[key] = value
                g[key] = wrapper
    previous = (getattr(_armed, "names", None), getattr(_armed, "hits", None))
    _armed.names, _armed.hits = set(wires), hits

    def disarm():
        _armed.names, _armed.hits = previous
        for key, value in swapped.items():
            g[key] = value

    return disarm


# ----------------------------------------------------------------- call tracing

def _trace_calls(func: Callable, api: list[str], called: list[str]):
    """Temporarily wrap the student's other API functions to record which ones `func` calls."""
    g = getattr(func, "__globals__", None)
    if not isinstance(g, dict):
        return lambda: None
    saved = {}
    for name in api:
        f = g.get(name)
        if callable(f) and f is not func:
            saved[name] = f

            def wrapper(*a, __f=f, __n=name, **k):
                if __n not in called:
                    called.append(__n)
                return __f(*a, **k)

            g[name] = wrapper

    def restore():
        for name, f in saved.items():
            g[name] = f

    return restore


# ----------------------------------------------------------------- errors

def _is_student_frame(filename: str) -> bool:
    if not filename or filename.startswith(_ENGINE_DIR):
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
             want_grad: bool = False, forbidden: list[str] = (), api: list[str] = ()) -> dict:
    """Call `func(*args, **kwargs)` on fresh copies of the inputs and return its outcome.

    `upstream` is the gradient of the loss with respect to each tensor of the expected output
    (same nesting); when it is given and `want_grad`, the outcome holds the gradient reaching
    each floating-point input, or None where none reaches it.
    """
    call_args, call_kwargs, diff = _prepare_inputs(args, kwargs, want_grad)
    before = _clone_tree((call_args, call_kwargs))
    outcome: dict[str, Any] = {"status": "ok", "output": None, "grads": None, "grad_error": None,
                               "mutated": [], "forbidden": [], "called": [], "error": None}
    hits: list[str] = []
    called: list[str] = []
    fn_names = [n for n in forbidden if n.startswith("torch.")]
    node_names = {n[len("autograd."):]: n for n in forbidden if n.startswith("autograd.")}
    wire_names = [n for n in forbidden if is_tripwire_name(n)]
    restore = _trace_calls(func, list(api), called)
    disarm = _arm_tripwires(func, wire_names, hits) if wire_names else None
    try:
        if fn_names:
            with _ForbiddenFunctions(fn_names, hits):
                output = func(*call_args, **call_kwargs)
        else:
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
        if disarm is not None:
            disarm()
        restore()
    if node_names and output is not None:
        for node in sorted(_graph_nodes(output) & node_names.keys()):
            if node_names[node] not in hits:
                hits.append(node_names[node])
    outcome["forbidden"] = hits
    outcome["called"] = called
    outcome["mutated"] = [path_key(p) for p, t in iter_arrays(before)
                          if not _same(t, _get(call_args, call_kwargs, p))]
    if outcome["status"] != "ok":
        return outcome
    outcome["output"] = output
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
        # The gradient of sum(output * upstream) is the vector-Jacobian product with the
        # upstream gradient, exactly; a scalar loss also spares autograd.grad's lazy import of
        # the symbolic-shapes machinery (sympy, ~0.5 s) that explicit grad_outputs trigger.
        loss = sum((g * u).sum() for g, u in pairs)
        result = torch.autograd.grad(loss, [t for _, t in diff], allow_unused=True)
    except BaseException as exc:  # noqa: BLE001
        return None, "backward failed: " + _clip(f"{type(exc).__name__}: {exc}", 200)
    for (p, _), g in zip(diff, result):
        grads[path_key(p)] = None if g is None else g.detach()
    return grads, None


def _get_out(output, path):
    value = output
    for p in path:
        value = value[p]
    return value
