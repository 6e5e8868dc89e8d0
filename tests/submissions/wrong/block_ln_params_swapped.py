# mistake: transformer_block uses the second layer norm's gamma and beta in the first and vice versa (not in the catalogue: no mistake should be named)
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: norm
# diagnosis: none
import math
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    x_max, _ = torch.max(x, dim=dim, keepdim=True)
    numerator = torch.exp(x - x_max.detach())
    denominator = torch.sum(numerator, dim=dim, keepdim=True)
    return numerator / denominator


def causal_mask(T: int) -> Tensor:
    full = torch.ones(T, T)
    lower = torch.tril(full)
    return lower == 0


def _apply_mask(scores: Tensor, mask: Optional[Tensor]) -> Tensor:
    if mask is None:
        return scores
    very_negative = torch.finfo(scores.dtype).min
    return scores.masked_fill(mask, very_negative)


def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor] = None
) -> Tuple[Tensor, Tensor]:
    d_k = q.size(-1)
    q_scaled = q / math.sqrt(d_k)
    scores = q_scaled @ k.mT
    scores = _apply_mask(scores, mask)
    attn_weights = softmax(scores, dim=-1)
    return attn_weights @ v, attn_weights


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    lead = x.shape[:-2]
    T, d_model = x.shape[-2:]
    d_head = d_model // n_heads
    y = x.contiguous().view(*lead, T, n_heads, d_head)
    nd = y.dim()
    perm = list(range(nd - 3)) + [nd - 2, nd - 3, nd - 1]
    return y.permute(*perm)


def merge_heads(x: Tensor) -> Tensor:
    nd = x.dim()
    perm = list(range(nd - 3)) + [nd - 2, nd - 3, nd - 1]
    y = x.permute(*perm).contiguous()
    return y.view(*y.shape[:-2], y.shape[-2] * y.shape[-1])


def _project(x: Tensor, w: Tensor) -> Tensor:
    return torch.matmul(x, w)


def multi_head_attention(
    x: Tensor,
    params: Dict[str, Tensor],
    n_heads: int,
    mask: Optional[Tensor] = None,
    context: Optional[Tensor] = None,
) -> Tensor:
    if context is None:
        context = x
    q = split_heads(_project(x, params["w_q"]), n_heads)
    k = split_heads(_project(context, params["w_k"]), n_heads)
    v = split_heads(_project(context, params["w_v"]), n_heads)
    heads, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    return _project(merge_heads(heads), params["w_o"])


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    x_hat = (x - mean) / (var + eps).sqrt()
    return x_hat * gamma + beta


def _ffn(h: Tensor, params: Dict[str, Tensor]) -> Tensor:
    hidden = torch.clamp(_project(h, params["w1"]) + params["b1"], min=0)
    return _project(hidden, params["w2"]) + params["b2"]


def transformer_block(
    x: Tensor, params: Dict[str, Tensor], n_heads: int, mask: Optional[Tensor] = None
) -> Tensor:
    h = layer_norm(
        x + multi_head_attention(x, params, n_heads, mask=mask),
        params["ln2_gamma"],
        params["ln2_beta"],
    )
    out = layer_norm(h + _ffn(h, params), params["ln1_gamma"], params["ln1_beta"])
    return out
