# attack: softmax lowers a TorchScript graph of aten::softmax with torch's TensorExpr (NNC) compiler and runs the loops it generates in NNC's IR evaluator, inside a custom autograd.Function with a hand-written backward (no softmax operator reaches the dispatcher)
# target: softmax
# expect: torch's TensorExpr compiler is refused in the worker (it computes operators past the dispatcher): softmax gets status forbidden call and 0 points; the other questions pass
"""A library softmax compiled by torch's TensorExpr (NNC) compiler."""

import math

import torch

# ---------------------------------------------------------------------------------------------
# A correct implementation (the same in every file of this folder). The public functions only
# delegate to private helpers, so an attack that replaces one public function below leaves the
# other questions intact.
# ---------------------------------------------------------------------------------------------


def _softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim=dim, keepdim=True)


def _causal_mask(T):
    rows = torch.arange(T).unsqueeze(1)
    cols = torch.arange(T).unsqueeze(0)
    return cols > rows


def _attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = _softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def _split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-3, -2)


def _merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def _multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = _split_heads(x @ params["w_q"], n_heads)
    k = _split_heads(source @ params["w_k"], n_heads)
    v = _split_heads(source @ params["w_v"], n_heads)
    out, _ = _attention(q, k, v, mask)
    return _merge_heads(out) @ params["w_o"]


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    return centered / torch.sqrt(var + eps) * gamma + beta


def _transformer_block(x, params, n_heads, mask=None):
    attn = _multi_head_attention(x, params, n_heads, mask)
    h = _layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return _layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


def softmax(x, dim=-1):
    return _softmax(x, dim)


def causal_mask(T):
    return _causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    return _attention(q, k, v, mask)


def split_heads(x, n_heads):
    return _split_heads(x, n_heads)


def merge_heads(x):
    return _merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask)


# --- the attack ------------------------------------------------------------------------------

_GRAPH = """
graph(%x : Double(*, *, strides=[*, 1], device=cpu)):
  %d : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Double(*, *, strides=[*, 1], device=cpu) = aten::softmax(%x, %d, %none)
  return (%y)
"""


def _nnc_softmax(x2d):
    """The forward of the library softmax, as NNC's loops run by its IR evaluator."""
    te = torch._C._te
    torch._C._jit_set_te_must_use_llvm_cpu(False)      # no LLVM here: the IR evaluator
    graph = torch._C.parse_ir(_GRAPH.replace("*, *", f"{x2d.shape[0]}, {x2d.shape[1]}")
                              .replace("[*, 1]", f"[{x2d.shape[1]}, 1]"))
    kernel = te.TensorExprKernel(graph)
    return kernel.run(((x2d - x2d.amax(-1, keepdim=True)).double().contiguous(),)).to(x2d.dtype)


class _Compiled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        moved = x.movedim(dim, -1)
        flat = moved.reshape(-1, moved.shape[-1])
        y = _nnc_softmax(flat).reshape(moved.shape).movedim(-1, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None


def softmax(x, dim=-1):
    return _Compiled.apply(x, dim)
