# assignment: attention
# mistake: multi-head attention for (B, T, C) inputs: scores from `k.transpose(2, 3)`, and an additive padding mask `mask.unsqueeze(1) * -1e9` that a causal (T, T) mask does not broadcast with, so masked cases fail at the masking line; no `.T` anywhere
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: fixed_rank
"""Multi-head attention in one function, with an additive mask as older tutorials write it."""
import math

import torch


def softmax(x, dim=-1):
    shifted = x - x.amax(dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim, keepdim=True)


def causal_mask(T):
    i = torch.arange(T)
    return i[None, :] > i[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    logits = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        logits = torch.where(mask, torch.full_like(logits, float("-inf")), logits)
    probs = softmax(logits)
    return torch.einsum("...qk,...kd->...qd", probs, v), probs


def split_heads(x, n_heads):
    head_dim = x.size(-1) // n_heads
    return torch.movedim(x.reshape(x.shape[:-1] + (n_heads, head_dim)), -2, -3)


def merge_heads(x):
    x = torch.movedim(x, -3, -2)
    return x.reshape(x.shape[:-2] + (-1,))


def _heads(t, w, n_heads):
    b, n, _ = t.shape
    return (t @ w).view(b, n, n_heads, -1).permute(0, 2, 1, 3)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    b, n, width = x.shape
    src = context if context is not None else x
    q = _heads(x, params["w_q"], n_heads)
    k = _heads(src, params["w_k"], n_heads)
    v = _heads(src, params["w_v"], n_heads)
    att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(width // n_heads)
    if mask is not None:
        att = att + (-1e9) * mask.unsqueeze(1).to(att.dtype)
    att = softmax(att, dim=-1)
    y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, n, width)
    return y @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return gamma * (x - mu) * torch.rsqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    attn_out = multi_head_attention(x, params, n_heads, mask)
    x = layer_norm(attn_out + x, params["ln1_gamma"], params["ln1_beta"])
    hidden = torch.relu(x @ params["w1"] + params["b1"])
    out = x + hidden @ params["w2"] + params["b2"]
    return layer_norm(out, params["ln2_gamma"], params["ln2_beta"])
