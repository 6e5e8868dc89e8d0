# mistake: attention multiplies the queries by the keys as they are, q @ k, without transposing them: it fails whenever d_k differs from the number of keys
# loses: attention, mask, multi_head, block
# keeps: softmax, split_heads
# hint: shape
# diagnosis: keys_not_transposed
"""Attention from scratch."""
import math

import torch


def softmax(x, dim=-1):
    z = x - x.amax(dim=dim, keepdim=True)
    ez = torch.exp(z)
    return ez / ez.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k) / math.sqrt(d_k)    # every query against every key
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
