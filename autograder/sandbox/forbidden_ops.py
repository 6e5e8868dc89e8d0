"""Which aten operators compute each forbidden library routine.

An assignment forbids routines by the names students know (`torch.softmax`,
`torch.nn.functional.layer_norm`...). Every Python route to such a routine, whatever name,
container, alias, private entry point or custom `autograd.Function` reached it, ends in one of
a few dispatcher operators; `dispatch_guard` refuses those operators while a question that
forbids the routine is running. This table maps the routines to the operators. It lists every
kernel that computes the same thing, forward and backward: softmax also as log-softmax, the
masked, "safe" (attention's) and sparse variants; attention as the fused kernels and what
`F.scaled_dot_product_attention` and `nn.MultiheadAttention` reach on a CPU; layer norm also as
group, batch and instance norm (each can be used as a layer norm). Measured with torch 2.13.

A torch routine the table does not list (`torch.mul` in an author's own assignment) is refused
by name only, where the function is (`guard.py`): its operator is also what honest code such as
`2 * x` reaches. An operator missing from the installed torch is skipped at run time (older
versions lack some of them); `autograder lint` says which ones are missing.
"""
from __future__ import annotations

from typing import Iterable

SOFTMAX_OPS = (
    "_softmax", "_softmax_backward_data",
    "_log_softmax", "_log_softmax_backward_data",
    "_safe_softmax",                                  # what the attention kernels' math path calls
    "_masked_softmax", "_masked_softmax_backward",    # nn.MultiheadAttention's fast path
    "_sparse_softmax", "_sparse_softmax_backward_data",
    "_sparse_log_softmax", "_sparse_log_softmax_backward_data",
)

ATTENTION_OPS = (
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention",
    # The math path (a composite) decomposes into matmuls and this one softmax, which nothing
    # but attention kernels and their private entry point reach.
    "_safe_softmax",
    # nn.MultiheadAttention's and nn.TransformerEncoderLayer's fast paths
    "_native_multi_head_attention", "_transformer_encoder_layer_fwd",
)

LAYER_NORM_OPS = (
    "native_layer_norm", "native_layer_norm_backward",
    "native_group_norm", "native_group_norm_backward",
    # batch norm and instance norm (a batch norm over a reshaped input) on transposed input
    "native_batch_norm", "native_batch_norm_backward", "batch_norm_backward",
    "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional",
    "_batch_norm_with_update", "_batch_norm_with_update_functional", "_batch_norm_no_update",
)

# What each routine's name reaches. The `autograd.<Node>` names are the autograd graph nodes
# question files already declare; they stand for the same routines.
ROUTINE_OPS: dict[str, tuple[str, ...]] = {}
for _name in ("torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax",
              "torch.special.softmax", "torch.log_softmax", "torch.nn.functional.log_softmax",
              "torch.Tensor.log_softmax", "torch.special.log_softmax",
              "autograd.SoftmaxBackward0", "autograd.SafeSoftmaxBackward0",
              "autograd.LogSoftmaxBackward0"):
    # An attention kernel computes a softmax too (identity keys and values give the weights).
    ROUTINE_OPS[_name] = SOFTMAX_OPS + tuple(o for o in ATTENTION_OPS if o not in SOFTMAX_OPS)
for _name in ("torch.nn.functional.scaled_dot_product_attention",
              "torch.nn.functional.multi_head_attention_forward", "torch.nn.MultiheadAttention",
              "autograd.ScaledDotProductFlashAttentionForCpuBackward0"):
    ROUTINE_OPS[_name] = ATTENTION_OPS
for _name in ("torch.nn.functional.layer_norm", "torch.layer_norm", "torch.nn.LayerNorm",
              "torch.native_layer_norm", "torch.nn.functional.group_norm",
              "torch.nn.functional.batch_norm", "torch.nn.functional.instance_norm",
              "autograd.NativeLayerNormBackward0"):
    ROUTINE_OPS[_name] = LAYER_NORM_OPS

# The dispatch keys whose kernels compute on a CPU (dense, sparse, nested, MKL-DNN, quantized)
# or stand for every backend (the composite-explicit aliases). Meta kernels compute nothing.
KEYS = ("CPU", "SparseCPU", "SparseCsrCPU", "NestedTensorCPU", "QuantizedCPU", "MkldnnCPU",
        "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def routine_ops(names: Iterable[str]) -> dict[str, str]:
    """{operator: the first routine of `names` that reaches it}, for the routines this table
    knows; a routine it does not know (a tripwire name, a typo) maps to nothing here."""
    found: dict[str, str] = {}
    for name in names:
        for op in ROUTINE_OPS.get(name, ()):
            found.setdefault(op, name)
    return found


def _resolves(name: str) -> bool:
    """Whether a dotted torch name (`torch.mul`) is an attribute of the installed torch."""
    import torch

    obj = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


def overloads(op: str) -> list[str]:
    """The dispatcher names of every overload of `aten::<op>` in the installed torch
    (`_softmax`, `_softmax.out`, ...); empty when torch has no such operator."""
    import torch

    try:
        packet = getattr(torch.ops.aten, op)
        names = packet.overloads()
    except (AttributeError, RuntimeError):
        return []
    return [op if o == "default" else f"{op}.{o}" for o in names]


def kernel_keys(overload: str) -> list[str]:
    """The keys of `KEYS` that have a kernel of their own for `aten::<overload>`."""
    import torch

    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        return ["CPU"]
    out = []
    for key in KEYS:
        try:
            if has(f"aten::{overload}", key):
                out.append(key)
        except (RuntimeError, ValueError):   # a key this torch does not know
            continue
    return out


# The torch this table was measured with. An older torch lacks operators added since (2.4 has
# no `_safe_softmax`), which nothing can call there; a newer one that lacks one has renamed or
# removed it, and the table needs measuring again.
MEASURED_WITH = (2, 13)


def torch_version() -> tuple[int, int]:
    """(major, minor) of the installed torch ("2.4.1+cu121" is (2, 4))."""
    import torch

    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def missing_ops(names: Iterable[str], installed: tuple[int, int] | None = None) -> list[str]:
    """Operators some routine of `names` maps to that the installed torch does not have at all,
    on a torch at least as new as the table (for `autograder lint`, which `check` runs too: a
    student's older torch is no authoring mistake)."""
    if (installed or torch_version()) < MEASURED_WITH:
        return []
    return sorted({op for op in routine_ops(names) if not overloads(op)})


def unmapped(names: Iterable[str]) -> list[str]:
    """Forbidden torch routines (`torch.` or `autograd.` names) that neither this table maps to
    operators nor the installed torch has (a typo): nothing would refuse them (for `lint`)."""
    return [n for n in names if n.startswith(("torch.", "autograd.")) and n not in ROUTINE_OPS
            and not (n.startswith("torch.") and _resolves(n))]
