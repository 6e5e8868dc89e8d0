# assignment: attention
# mistake: split_heads reshapes to (..., T, n_heads, d_head) and stops there (the transpose is forgotten); multi-head attention then fails inside a correct attention, at the line that applies the mask
# loses: split_heads, multi_head, block
# keeps: softmax, attention, mask
# diagnosis: split_heads_no_swap
"""Attention exercises."""
import math

import torch


def softmax(x, dim=-1):
    e = (x - x.amax(dim=dim, keepdim=True)).exp()
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.reshape(*x.shape[:-1], n_heads, d_head)


def merge_heads(x):
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    f = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
