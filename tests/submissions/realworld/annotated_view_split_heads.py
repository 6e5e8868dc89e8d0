# assignment: attention
# mistake: split and merge heads in the style of the Annotated Transformer, `x.view(nbatches, -1, h, d_k).transpose(1, 2)` with nbatches = x.size(0): an unbatched input silently gets the wrong shape instead of an error
# loses: split_heads, multi_head, block
# keeps: softmax, attention, mask
# diagnosis: fixed_rank
"""Heads split the way the Annotated Transformer's MultiHeadedAttention.forward does it."""
import math

import torch


def softmax(x, dim=-1):
    x = x - x.amax(dim=dim, keepdim=True)
    numerator = x.exp()
    return numerator / numerator.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T), diagonal=1) == 1


def scaled_dot_product_attention(q, k, v, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    p_attn = softmax(scores, dim=-1)
    return torch.matmul(p_attn, v), p_attn


def split_heads(x, n_heads):
    nbatches = x.size(0)
    d_k = x.size(-1) // n_heads
    return x.view(nbatches, -1, n_heads, d_k).transpose(1, 2)


def merge_heads(x):
    nbatches, h, d_k = x.size(0), x.size(1), x.size(-1)
    return x.transpose(1, 2).contiguous().view(nbatches, -1, h * d_k)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    memory = x if context is None else context
    query = split_heads(torch.matmul(x, params["w_q"]), n_heads)
    key = split_heads(torch.matmul(memory, params["w_k"]), n_heads)
    value = split_heads(torch.matmul(memory, params["w_v"]), n_heads)
    x, _ = scaled_dot_product_attention(query, key, value, mask=mask)
    return torch.matmul(merge_heads(x), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    std = torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)
    return gamma * (x - mean) / std + beta


def transformer_block(x, params, n_heads, mask=None):
    x = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(x + ff, params["ln2_gamma"], params["ln2_beta"])
