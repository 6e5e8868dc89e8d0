"""torch's dispatcher seen from the refusals: an operator's overloads and the keys it runs at.

Which operators compute which routine is the assignment's data (`routines.py`); this module
says, for one aten operator of the installed torch, every overload and every dispatch key at
which a call of it can run on a CPU, so that a refusal registered there meets every route:
whatever Python name, alias, container, private entry point or custom `autograd.Function` led
to the operator, forward or backward.

An operator missing from the installed torch is skipped at run time (older versions lack some
of them); `autograder lint` says which ones are missing.
"""
from __future__ import annotations

from typing import Iterable

# The runtime keys at which a call of an operator on CPU data runs a kernel: autograd's (where
# an operator without a kernel of its own, a composite such as `linear`, runs its
# decomposition), and the CPU backends (dense, sparse, nested, quantized, MKL-DNN). A call
# under `inference_mode` skips the autograd keys and meets the backend's.
AUTOGRAD_KEYS = ("AutogradCPU", "AutogradNestedTensor")
BACKEND_KEYS = ("CPU", "SparseCPU", "SparseCsrCPU", "NestedTensorCPU", "QuantizedCPU",
                "MkldnnCPU")
KEYS = AUTOGRAD_KEYS + BACKEND_KEYS


def overloads(op: str) -> list[str]:
    """The dispatcher names of every overload of `aten::<op>` in the installed torch
    (`_softmax`, `_softmax.out`, ...); empty when torch has no such operator. An overload name
    (`_softmax.out`) stands for itself alone."""
    import torch

    base, _, only = op.partition(".")
    try:
        packet = getattr(torch.ops.aten, base)
        names = packet.overloads()
    except (AttributeError, RuntimeError):
        return []
    if only:
        names = [n for n in names if n == only]
    return [base if o == "default" else f"{base}.{o}" for o in names]


def runtime_keys(overload: str, keys: Iterable[str] = KEYS) -> list[str]:
    """The keys of `keys` at which a call of `aten::<overload>` runs a kernel (its own or one it
    inherits from a composite registration), fallthroughs left out."""
    import torch

    has = getattr(torch._C, "_dispatch_has_computed_kernel_for_dispatch_key", None)
    fallthrough = getattr(torch._C, "_dispatch_kernel_for_dispatch_key_is_fallthrough", None)
    if has is None:
        return ["CPU"]
    out = []
    for key in keys:
        try:
            if not has(f"aten::{overload}", key):
                continue
        except (RuntimeError, ValueError):   # a key this torch does not know
            continue
        try:
            if fallthrough is not None and fallthrough(f"aten::{overload}", key):
                continue
        except (RuntimeError, ValueError):   # no kernel registered at the key itself: the
            pass                             # one it runs comes from a composite's
        out.append(key)
    return out


def own_kernel_keys(overload: str, keys: Iterable[str] = BACKEND_KEYS) -> list[str]:
    """The keys of `keys` at which `aten::<overload>` runs a kernel of its own or an explicit
    composite's (never a composite's decomposition). A kernel registered at a backend key of an
    operator that has none would change which kernel autograd runs for it, so a kernel that
    only watches an operator goes only there."""
    import torch

    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        return []
    name = f"aten::{overload}"
    try:
        explicit = any(has(name, k) for k in ("CompositeExplicitAutograd",
                                              "CompositeExplicitAutogradNonFunctional"))
    except (RuntimeError, ValueError):
        explicit = False
    out = []
    for key in runtime_keys(overload, keys):
        try:
            if explicit or has(name, key):
                out.append(key)
        except (RuntimeError, ValueError):
            continue
    return out


# The torch the project pins. An older torch lacks operators added since (2.4 has no
# `_safe_softmax`), which nothing can call there; a torch at least this new that lacks one has
# renamed or removed it, and the assignment's table needs measuring again.
MEASURED_WITH = (2, 13)


def torch_version() -> tuple[int, int]:
    """(major, minor) of the installed torch ("2.4.1+cu121" is (2, 4))."""
    import torch

    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def missing_ops(ops: Iterable[str], installed: tuple[int, int] | None = None) -> list[str]:
    """Operators of `ops` the installed torch does not have at all, on a torch at least as new
    as the one the project pins (for `autograder lint`, which `check` runs too: a student's
    older torch is no authoring mistake)."""
    if (installed or torch_version()) < MEASURED_WITH:
        return []
    return sorted({op for op in ops if not overloads(op)})
