# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
"""Blocked scores set with torch.where, multi-head attention as a Python loop over the heads'
column slices (concatenated, then projected), and a layer norm whose eps becomes a float32 tensor
constant: harmless there, since eps in float32 is within 1e-8 of eps, and eps only shifts a
variance far larger than that difference."""
import math

import torch


def softmax(x, dim=-1):
    m = x.amax(dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim, keepdim=True)


def causal_mask(T):
    rows = torch.arange(T).unsqueeze(1)
    cols = torch.arange(T).unsqueeze(0)
    return cols > rows


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, torch.full_like(scores, float("-inf")), scores)
    w = softmax(scores)
    return w @ v, w


def split_heads(x, n_heads):
    d = x.shape[-1] // n_heads
    return torch.stack([x[..., h * d:(h + 1) * d] for h in range(n_heads)], dim=-3)


def merge_heads(x):
    return torch.cat([x[..., h, :, :] for h in range(x.shape[-3])], dim=-1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    ctx = x if context is None else context
    q, k, v = x @ params["w_q"], ctx @ params["w_k"], ctx @ params["w_v"]
    d = q.shape[-1] // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d, (h + 1) * d)
        m = None if mask is None else mask.squeeze(-3) if mask.dim() >= 3 and \
            mask.shape[-3] == 1 else mask
        out, _ = scaled_dot_product_attention(q[..., cols], k[..., cols], v[..., cols], m)
        heads.append(out)
    return torch.cat(heads, dim=-1) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + torch.tensor(eps)) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    a = multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = (h @ params["w1"] + params["b1"]).clamp(min=0) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
