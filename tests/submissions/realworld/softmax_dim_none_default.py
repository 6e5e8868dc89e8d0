# assignment: attention
# mistake: softmax(x, dim=None) normalises the whole tensor when called without a dimension; right whenever dim is given, but attention calls it without one
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads
# diagnosis: softmax_default_axis
"""Functional attention, einsum for the products."""
import math

import torch


def softmax(x, dim=None):
    if dim is None:
        m = x.max()
    else:
        m = x.amax(dim=dim, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def split_heads(x, n_heads):
    *batch, T, d_model = x.shape
    return x.reshape(*batch, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *batch, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*batch, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    q = split_heads(torch.einsum("...td,de->...te", x, params["w_q"]), n_heads)
    k = split_heads(torch.einsum("...td,de->...te", src, params["w_k"]), n_heads)
    v = split_heads(torch.einsum("...td,de->...te", src, params["w_v"]), n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return torch.einsum("...td,de->...te", merge_heads(out), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    p = params
    h = layer_norm(x + multi_head_attention(x, p, n_heads, mask), p["ln1_gamma"], p["ln1_beta"])
    f = torch.relu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return layer_norm(h + f, p["ln2_gamma"], p["ln2_beta"])
