# mistake: softmax exponentiates the raw logits without subtracting the max, so exp overflows to inf and gives nan for large logits
# loses: softmax
# keeps: attention, mask, split_heads, multi_head, block
# hint: nan
import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    # normalise each row of scores (shift by the row max first)
    scores = scores - scores.amax(dim=-1, keepdim=True)
    weights = torch.exp(scores)
    weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    d_head = d_model // n_heads
    x = x.reshape(*lead, T, n_heads, d_head)
    return x.transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    x = x.transpose(-3, -2)
    return x.reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if context is None:
        context = x
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(context @ params["w_k"], n_heads)
    v = split_heads(context @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])


why_scale = """
A score is a dot product of d_k numbers, so it gets bigger as d_k grows. With big scores the
softmax puts almost all the weight on one key, and then almost no gradient flows back, so the
model stops learning. Dividing by sqrt(d_k) keeps the scores small enough for a soft blend!
"""

why_quadratic = "The table of weights is T by T, so the cost grows with T squared."
