# assignment: attention
# mistake: multi-head attention with the attention written inline, scaled by the square root of d_model (the whole model width) instead of each head's size
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: scale_by_d_model
"""Multi-head attention in the style of an annotated walk-through of the original paper."""
import math

import torch


def softmax(x, dim=-1):
    z = x - x.max(dim=dim, keepdim=True)[0]
    numerator = torch.exp(z)
    return numerator / numerator.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones((T, T)), diagonal=1) == 1


def scaled_dot_product_attention(query, key, value, mask=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p_attn = softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn


def split_heads(x, n_heads):
    d_k = x.size(-1) // n_heads
    return x.view(*x.shape[:-1], n_heads, d_k).transpose(-3, -2)


def merge_heads(x):
    x = x.transpose(-3, -2).contiguous()
    return x.view(*x.shape[:-2], x.size(-2) * x.size(-1))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    memory = x if context is None else context
    d_model = x.size(-1)
    query = split_heads(x @ params["w_q"], n_heads)
    key = split_heads(memory @ params["w_k"], n_heads)
    value = split_heads(memory @ params["w_v"], n_heads)
    # "Scaled" attention, all heads at once.
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_model)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p_attn = softmax(scores, dim=-1)
    return merge_heads(torch.matmul(p_attn, value)) @ params["w_o"]


def layer_norm(x, a_2, b_2, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return a_2 * (x - mean) / torch.sqrt(var + eps) + b_2


def transformer_block(x, params, n_heads, mask=None):
    x = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(x + ff, params["ln2_gamma"], params["ln2_beta"])
