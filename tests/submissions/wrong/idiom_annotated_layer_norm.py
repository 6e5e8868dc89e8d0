# mistake: layer norm as in a well-known annotated tutorial: the unbiased standard deviation (n - 1), with eps added to the std instead of inside the square root (feedback names both)
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint:
# diagnosis: unbiased_variance, eps_outside_sqrt
"""A tutorial-style solution whose LayerNorm follows a widely copied module: a_2 * (x - mean) /
(std + eps) + b_2 with torch's default (unbiased) std. Two departures from nn.LayerNorm."""
import math

import torch
import torch.nn.functional as F

DROPOUT = 0.0


def softmax(x, dim=-1):
    x = x - torch.max(x, dim=dim, keepdim=True)[0]
    e = torch.exp(x)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.tril(torch.ones(T, T)) == 0


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    att = softmax(scores, dim=-1)
    att_dropped = F.dropout(att, p=DROPOUT, training=False)
    return att_dropped @ v, att


def split_heads(x, n_heads):
    head = x.size(-1) // n_heads
    return x.contiguous().view(*x.shape[:-1], n_heads, head).transpose(-2, -3)


def merge_heads(x):
    y = x.transpose(-2, -3).contiguous()
    return y.view(*y.shape[:-2], y.size(-2) * y.size(-1))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    memory = context if context is not None else x
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(memory @ params["w_k"], n_heads)
    v = split_heads(memory @ params["w_v"], n_heads)
    y, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(y) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    std = x.std(-1, keepdim=True)
    return gamma * (x - mean) / (std + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    x = layer_norm(x + F.dropout(multi_head_attention(x, params, n_heads, mask), p=DROPOUT,
                                 training=False), params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(x + ff, params["ln2_gamma"], params["ln2_beta"])
