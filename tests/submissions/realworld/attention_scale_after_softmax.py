# assignment: attention
# mistake: attention that applies the 1/sqrt(d_k) scale to the weights after the softmax instead of to the scores before it
# loses: attention, mask, multi_head, block
# keeps: softmax, split_heads
# diagnosis: scale_after_softmax
"""Homework: attention from scratch."""
import math

import torch


def softmax(x, dim=-1):
    x = x - x.amax(dim=dim, keepdim=True)
    return torch.exp(x) / torch.exp(x).sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores) / math.sqrt(q.shape[-1])
    return weights @ v, weights


def split_heads(x, n_heads):
    *lead, T, d = x.shape
    return x.reshape(*lead, T, n_heads, d // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, H, T, d = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, H * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_v"], n_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)[0]) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    v = ((x - m) ** 2).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(v + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    y = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + y, params["ln2_gamma"], params["ln2_beta"])
