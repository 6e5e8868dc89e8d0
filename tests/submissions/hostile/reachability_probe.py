# attack: walks everything reachable without an audited operation (module globals, builtins, its arguments and their attributes, closures and __globals__, sys.modules, import hooks, torch's mode stacks and library registrations, signal handlers, sys hooks, threads, warnings filters, finalizers) looking for any object of the grader's own engine; then walks what type.__subclasses__() and the frames library code hands back (their locals and globals) reach, resets every dispatcher registration handle and calls every arming or disarming function it finds, and checks that the grader's refusal of aten::_softmax is still in torch's dispatch table
# target: softmax
# expect: finds no engine object in the ordinary roots, and no lever removes a refusal: every question keeps full marks (softmax would raise naming what it found, or the refusal it removed), flagged for review only for its reflection
"""A probe of what student code can reach in the worker without an audited (refused) call.

`softmax` raises, naming the objects found, if anything whose module or type belongs to the
engine (`autograder`) is reachable; otherwise it returns a correct softmax. The walk uses only
operations CPython does not audit: attribute and item reads, `__globals__`, `__closure__`,
`__dict__`.

Then a second walk (`levers`) starts where the first does not: `type.__subclasses__()`, which
lists every class of the process, the engine's included (they cannot be unloaded from a forked
worker), and the frames that library code hands back (`traceback.walk_stack`, reachable as
`logging.traceback`, and torch's `createResolutionCallbackFromFrame`), with their locals and
globals. Reaching engine objects that way is expected; what must not be reachable is a way to
switch a refusal off. The probe resets every dispatcher registration handle it reaches and calls
every function named like an arming switch, then reads torch's dispatch table for
`aten::_softmax` (text, without calling it): the grader's refusing kernels must still be there
(else softmax raises "LEVER"; see docs/trust-model.md). The walks run once per worker, which
survives: a correct softmax follows.
"""
import math
import signal
import sys
import threading
import types
import warnings
import weakref

import torch

ENGINE = "autograder"
# Objects the walk learns nothing from: builtins' own types (never the engine's), with no
# children the walk would follow. Skipping them only makes the walk cheaper.
LEAVES = {str, bytes, int, float, complex, bool, type(None), types.BuiltinFunctionType,
          types.GetSetDescriptorType, types.MemberDescriptorType, types.MethodDescriptorType,
          types.WrapperDescriptorType, types.MethodWrapperType}
CONTAINERS = {dict, list, tuple, set, frozenset}
LIMIT = 400_000          # objects visited at most: the walk's cost is bounded by counting
SWITCHES = {"arm", "disarm", "reset"}    # names of functions that could switch a refusal off


def _is_engine(obj) -> str | None:
    try:
        if isinstance(obj, types.ModuleType):
            name = obj.__name__ if isinstance(obj.__name__, str) else ""
            return f"module {name}" if name.split(".")[0] == ENGINE else None
        if isinstance(obj, type):
            module = type.__dict__["__module__"].__get__(obj)
            return f"class {module}.{obj.__qualname__}" if str(module).startswith(ENGINE) else None
        if isinstance(obj, types.FunctionType):
            g = obj.__globals__.get("__name__")
            if isinstance(g, str) and g.startswith(ENGINE):
                return f"function {g}.{obj.__qualname__}"
            return None
        kind = type(obj)
        module = type.__dict__["__module__"].__get__(kind)
        if str(module).startswith(ENGINE):
            return f"instance of {module}.{kind.__qualname__}"
    except Exception:  # noqa: BLE001 - an odd object: not a finding
        return None
    return None


def _children(obj):
    if isinstance(obj, dict):
        yield from list(obj.keys())
        yield from list(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        yield from list(obj)
    if isinstance(obj, types.ModuleType):
        yield from list(vars(obj).values())
    elif isinstance(obj, type):
        yield from list(vars(obj).values())
        yield from obj.__mro__
    elif isinstance(obj, types.FunctionType):
        yield obj.__globals__
        for cell in obj.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:
                pass
        yield obj.__dict__
    elif isinstance(obj, types.MethodType):
        yield obj.__func__
        yield obj.__self__
    elif isinstance(obj, (staticmethod, classmethod)):
        yield obj.__func__
    elif isinstance(obj, property):
        yield obj.fget
        yield obj.fset
    elif isinstance(obj, weakref.ref):
        yield obj()
    elif not isinstance(obj, (str, bytes, int, float, complex, bool, torch.Tensor)):
        d = getattr(type(obj), "__dict__", {}).get("__dict__")
        if d is not None and hasattr(d, "__get__"):
            try:
                yield d.__get__(obj)
            except Exception:  # noqa: BLE001
                pass
        partial = getattr(obj, "func", None) if type(obj).__name__ == "partial" else None
        if partial is not None:
            yield partial
            yield obj.args
            yield obj.keywords


def _roots(args):
    yield "arguments", args
    yield "my globals", globals()
    yield "builtins", vars(__builtins__) if isinstance(__builtins__, types.ModuleType) \
        else __builtins__
    yield "sys.modules", dict(sys.modules)
    yield "sys.meta_path", list(sys.meta_path)
    yield "sys.path_hooks", list(sys.path_hooks)
    yield "sys.path_importer_cache", dict(sys.path_importer_cache)
    yield "sys hooks", [sys.excepthook, sys.displayhook, sys.unraisablehook, sys.breakpointhook,
                        sys.gettrace(), sys.getprofile(), sys.stdout, sys.stderr, sys.stdin]
    yield "signal handlers", [signal.getsignal(s) for s in signal.valid_signals()
                              if s < signal.NSIG]
    yield "threads", threading.enumerate()
    yield "warnings filters", list(warnings.filters)
    yield "finalizers", dict(weakref.finalize._registry)
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    yield "function modes", _get_current_function_mode_stack()
    yield "dispatch modes", _get_current_dispatch_mode_stack()
    import torch.library as library
    yield "torch.library", [vars(library).get("_impls"), vars(library).get("_keep_alive")]


def _describe(obj) -> str:
    try:
        if isinstance(obj, types.ModuleType):
            return f"module {obj.__name__}"
        if isinstance(obj, (type, types.FunctionType)):
            return f"{type(obj).__name__} {obj.__qualname__}"
        return type(obj).__name__
    except Exception:  # noqa: BLE001
        return "?"


_WALKED: dict = {}      # the first walk's visited objects (id -> object), for the second
_HANDLES: list = []     # dispatcher registration handles either walk reached
_SWITCHES: list = []    # functions named like arming switches either walk reached


def _note_lever(obj, engine_side: bool) -> None:
    """A registration handle (a raw one where the engine's objects lead, or a
    `torch.library.Library` anywhere that registered a softmax kernel), or a switch where the
    engine's objects lead (libraries' own `reset` functions elsewhere switch nothing of it)."""
    kind = type(obj).__name__
    if kind == "_DispatchModule" and engine_side:
        _HANDLES.append(obj)
    elif kind == "Library" and any("_softmax" in str(i) for i in
                                   (getattr(obj, "_op_impls", None) or ())):
        _HANDLES.append(getattr(obj, "m", None))
    elif engine_side and isinstance(obj, types.FunctionType) and obj.__name__ in SWITCHES \
            and obj.__globals__ is not globals():
        _SWITCHES.append(obj)


def probe(*args) -> list[str]:
    """What of the engine is reachable, each with the path that led to it."""
    found: dict[str, str] = {}
    seen: dict[int, int | None] = {}     # id -> id of the object it was reached from
    keep = _WALKED       # keeps visited objects alive, so their ids stay unique
    for label, root in _roots(args):
        if id(root) in seen:
            continue
        seen[id(root)], keep[id(root)] = None, root
        stack = [root]
        while stack and len(seen) < LIMIT:
            obj = stack.pop()
            _note_lever(obj, False)
            what = _is_engine(obj)
            if what is not None:
                path, at = [], seen[id(obj)]
                while at is not None and len(path) < 12:
                    path.append(_describe(keep[at]))
                    at = seen[at]
                found.setdefault(what, f"{label}: " + " <- ".join(path))
                continue
            children = []
            try:
                children.extend(_children(obj))
            except Exception:  # noqa: BLE001 - an object that resists being read: what it
                pass           # yielded before is still walked
            here = id(obj)
            for child in children:
                kind = type(child)
                if kind in LEAVES or (kind in CONTAINERS and not child) or id(child) in seen:
                    continue
                seen[id(child)], keep[id(child)] = here, child
                stack.append(child)
    return [f"{what} (from {where})" for what, where in found.items()]




def _subclasses() -> list:
    found, todo = {}, [object]
    while todo:
        cls = todo.pop()
        try:
            subs = type.__subclasses__(cls)
        except TypeError:
            continue
        for sub in subs:
            if id(sub) not in found:
                found[id(sub)] = sub
                todo.append(sub)
    return list(found.values())


def _handed_frames() -> list:
    """Frames library code hands back: their locals and globals (not audited)."""
    import logging

    import torch._jit_internal as jit_internal

    spaces = []
    for frame, _ in logging.traceback.walk_stack(None):
        spaces += [frame.f_locals, frame.f_globals]
    resolve = jit_internal.createResolutionCallbackFromFrame(0)
    for cell in getattr(resolve, "__closure__", None) or ():
        try:
            spaces.append(cell.cell_contents)
        except ValueError:
            pass
    return spaces


def levers() -> tuple[list, list]:
    """What the second walk reaches that could switch a refusal off: dispatcher registration
    handles, and functions named like arming switches (not the probe's own). It goes past what
    the first walk went through already (and found nothing of the engine in), but into the
    engine's objects, where the first walk stopped."""
    # Of `__subclasses__`, the classes the first walk could not reach: the engine's (the others
    # are in the modules it walked).
    engine = [c for c in _subclasses() if _is_engine(c) is not None]
    seen, stack = set(), [engine, _handed_frames()]
    while stack and len(seen) < LIMIT:
        obj = stack.pop()
        if id(obj) in _WALKED and _WALKED[id(obj)] is obj and _is_engine(obj) is None:
            continue
        _note_lever(obj, True)
        try:
            children = list(_children(obj))
        except Exception:  # noqa: BLE001
            continue
        for child in children:
            kind = type(child)
            if kind in LEAVES or (kind in CONTAINERS and not child) or id(child) in seen:
                continue
            seen.add(id(child))
            stack.append(child)
    return _HANDLES, _SWITCHES


def _pull(handles, switches) -> None:
    for handle in handles:
        try:
            handle.reset()
        except Exception:  # noqa: BLE001
            pass
    for switch in switches:
        for call in (lambda: switch([]), lambda: switch()):
            try:
                call()
                break
            except Exception:  # noqa: BLE001
                continue


def _softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim=dim, keepdim=True)


_findings = []


def _refusal_in_place() -> bool:
    """Whether the grader's refusing kernels for aten::_softmax are in torch's dispatch table
    (their registrations are named "<forbidden routine>")."""
    return "<forbidden routine>" in torch._C._dispatch_dump("aten::_softmax")


def softmax(x, dim=-1):
    if not _findings:
        found = probe(x, dim)
        armed = _refusal_in_place()
        _pull(*levers())
        if armed and not _refusal_in_place():
            found.append("LEVER: a handle or switch reached through __subclasses__ or a frame "
                         "removed the refusal of aten::_softmax")
        _findings.append(found)
    if _findings[0]:
        raise RuntimeError("REACHABLE: " + "; ".join(sorted(_findings[0]))[:3000])
    return _softmax(x, dim)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    w = _softmax(scores)
    return w @ v, w


def split_heads(x, n_heads):
    return x.unflatten(-1, (n_heads, x.shape[-1] // n_heads)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(src @ params["w_k"], n_heads)
    v = split_heads(src @ params["w_v"], n_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)[0]) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask), params["ln1_gamma"],
                   params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
