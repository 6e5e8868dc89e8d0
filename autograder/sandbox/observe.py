"""Library code computing a forbidden routine, recognised by where its operations come from.

A library can compute a routine from operators no refusal names: `torch.ao`'s quantizable
`MultiheadAttention` runs `bmm`, `softmax` and `bmm`, a private helper of torch's references
runs `var_mean` and `rsqrt`, each allowed on its own. What sets them apart from the student's
own code is not their name but where the operations come from: one call of a library function
performs the operations the routine is made of, the way the student was asked to.

An assignment gives each routine a *signature*: groups of operators, one of each needed to
compute it (attention: a batched matrix product, and a softmax or an exponential). While a
question forbids the routine, a kernel at torch's dispatcher (`guard.py`) sees each operator of
the signature as it runs and walks the Python stack above it: every frame of *library* code on
that stack accumulates the groups of the operators run under it; a library frame that
accumulates every group has computed the routine, and the refusal ends the worker. The walk
goes through the student's own frames (a `__torch_function__` of theirs cannot launder the
library's calls), stops at the engine's own frames (the call the grader made), and skips:

* the standard library, the student's code and code generated from it (fx's, dataclasses');
* torch's machinery that calls the student's code back (`nn.Module.__call__`, containers,
  autograd, checkpointing, functorch, fx, TorchScript, dynamo, torch-function and dispatch
  handling, higher-order control flow): a frame of those is never what computes.

Frames are told apart by their code object's file (which no student code can forge: building
or changing code is refused), cached per code object. Only frames still on the stack keep what
they accumulated. `autograder lint` lists each signature.
"""
from __future__ import annotations

import os
import sysconfig
from typing import Any, Callable, Iterable

STUDENT, OPAQUE, STOP = 0, 1, 2

# torch's own machinery that calls back code it was given (paths under the torch package).
TRANSPARENT_TORCH = (
    "nn/modules/module.py", "nn/modules/container.py", "nn/utils/stateless.py",
    "nn/utils/parametrize.py", "autograd/", "utils/checkpoint.py", "utils/_contextlib.py",
    "utils/hooks.py", "utils/_pytree.py", "utils/_python_dispatch.py", "_functorch/", "func/",
    "fx/", "jit/", "_jit_internal.py", "_dynamo/", "_compile.py", "compiler/", "overrides.py",
    "_ops.py", "library.py", "_library/", "amp/", "_higher_order_ops/cond.py",
    "_higher_order_ops/while_loop.py", "_higher_order_ops/map.py",
    "_higher_order_ops/scan.py", "_higher_order_ops/associative_scan.py",
)
# Single functions of torch that call code back from a module that otherwise computes.
TRANSPARENT_FUNCTIONS = ("torch.Tensor.backward", "torch.Tensor.register_hook")


def library_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(installed packages' folders, the standard library's folders), each ending in "/"."""
    paths = sysconfig.get_paths()
    packages = {paths.get("purelib"), paths.get("platlib")}
    import site

    for getter in (getattr(site, "getsitepackages", None),):
        try:
            packages |= set(getter() if getter else [])
        except Exception:  # noqa: BLE001 - a virtualenv's site without it
            pass
    stdlib = {paths.get("stdlib"), paths.get("platstdlib")}
    return (tuple(sorted(p.rstrip("/") + "/" for p in packages if p)),
            tuple(sorted(p.rstrip("/") + "/" for p in stdlib if p)))


def transparent_codes() -> set:
    """The code objects of `TRANSPARENT_FUNCTIONS`."""
    import torch

    found = set()
    for name in TRANSPARENT_FUNCTIONS:
        obj: Any = torch
        for part in name.split(".")[1:]:
            obj = getattr(obj, part, None)
        code = getattr(obj, "__code__", None)
        if code is not None:
            found.add(code)
    return found


def make_classifier(stop: Iterable[Any]) -> Callable[[Any], int]:
    """`classify(code)`: STOP for the engine's call frames (`stop`), OPAQUE for library code
    that may compute, STUDENT for everything else (the student's code, the standard library,
    torch's call-back machinery, generated code)."""
    import torch

    packages, stdlib = library_dirs()
    torch_dir = os.path.dirname(torch.__file__) + "/"
    transparent = tuple(torch_dir + p for p in TRANSPARENT_TORCH)
    codes = transparent_codes()
    stops = set(stop)
    _startswith = str.startswith

    def classify(code) -> int:
        if code in stops:
            return STOP
        if code in codes:
            return STUDENT
        name = code.co_filename
        if _startswith(name, packages):
            return STUDENT if _startswith(name, transparent) else OPAQUE
        if _startswith(name, stdlib) or _startswith(name, "<frozen "):
            return STUDENT
        return STUDENT

    return classify


WATCH_SOURCE = '''def watch(spec):
    me = "@get_ident"()
    tokens = "@tokens"
    tokens[me] = "@getframe"
    frame = "@getframe"(2)
    opaque = []
    classes = "@classes"
    while frame is not None:
        tokens[me] = frame
        code = frame.f_code
        kind = classes.get(code)
        if kind is None:
            kind = classes[code] = "@classify"(code)
        if kind == 2:
            break
        if kind == 1:
            opaque.append(frame)
        frame = frame.f_back
    tokens.pop(me, None)
    state = "@state"
    mine = state.get(me)
    now = {}
    for f in opaque:
        masks = {}
        if mine:
            old = mine.get(f)
            if old:
                masks.update(old)
        for slot, bit, full, code in spec:
            mask = masks.get(slot, 0) | bit
            masks[slot] = mask
            if mask == full:
                state.pop(me, None)
                return "@on_hit"(code)
        now[f] = masks
    state[me] = now
'''


def make_watch(isolated: Callable, classify: Callable, on_hit: Callable,
               tokens: dict) -> Callable:
    """The walk each signature operator's kernel runs while the refusals hold: `watch(spec)`,
    `spec` a tuple of (routine slot, the group's bit, every group's bits, refusal code) for
    the operator. `tokens`: shared with the audit hook, which lets exactly these frame reads
    through (each token names the one frame about to be read, and is used once)."""
    import sys
    import threading

    return isolated(WATCH_SOURCE, {
        "@get_ident": threading.get_ident, "@tokens": tokens, "@getframe": sys._getframe,
        "@classes": {}, "@classify": classify, "@state": {}, "@on_hit": on_hit}, "watch")
