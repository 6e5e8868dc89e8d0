# mistake: transformer_block normalises the attention output alone, without adding x back (no residual connection around the attention sublayer)
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: residual
# diagnosis: missing_attention_residual
"""Transformer pieces, written with small typed helpers."""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    stable = x - x.amax(dim=dim, keepdim=True)
    num = stable.exp()
    return num / num.sum(dim=dim, keepdim=True)


def causal_mask(T: int) -> Tensor:
    rows = torch.arange(T).view(T, 1)
    cols = torch.arange(T).view(1, T)
    return cols > rows


def scaled_dot_product_attention(q: Tensor, k: Tensor, v: Tensor,
                                 mask: Optional[Tensor] = None) -> tuple[Tensor, Tensor]:
    logits = q @ k.mT * (1.0 / math.sqrt(q.size(-1)))
    if mask is not None:
        logits = logits.masked_fill(mask, -math.inf)
    attn = softmax(logits, dim=-1)
    return attn @ v, attn


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    return x.unflatten(-1, (n_heads, -1)).transpose(-2, -3)


def merge_heads(x: Tensor) -> Tensor:
    return x.transpose(-2, -3).flatten(-2)


def _linear(x: Tensor, w: Tensor) -> Tensor:
    return x @ w


def multi_head_attention(x: Tensor, params: dict, n_heads: int, mask: Optional[Tensor] = None,
                         context: Optional[Tensor] = None) -> Tensor:
    src = x if context is None else context
    q = split_heads(_linear(x, params["w_q"]), n_heads)
    k = split_heads(_linear(src, params["w_k"]), n_heads)
    v = split_heads(_linear(src, params["w_v"]), n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return _linear(merge_heads(out), params["w_o"])


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5) -> Tensor:
    centred = x - x.mean(dim=-1, keepdim=True)
    var = centred.pow(2).mean(dim=-1, keepdim=True)
    return centred / (var + eps).sqrt() * gamma + beta


def _feed_forward(h: Tensor, params: dict) -> Tensor:
    return torch.relu(_linear(h, params["w1"]) + params["b1"]) @ params["w2"] + params["b2"]


def transformer_block(x: Tensor, params: dict, n_heads: int,
                      mask: Optional[Tensor] = None) -> Tensor:
    attended = multi_head_attention(x, params, n_heads, mask=mask)
    h = layer_norm(attended, params["ln1_gamma"], params["ln1_beta"])
    return layer_norm(h + _feed_forward(h, params), params["ln2_gamma"], params["ln2_beta"])
