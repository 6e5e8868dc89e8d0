# assignment: attention
# mistake: multi-head attention for (B, T, C) inputs: scores from `k.transpose(2, 3)`, and an additive padding mask `mask.unsqueeze(1) * -1e9` that a causal (T, T) mask does not broadcast with, so masked cases fail at the masking line; no `.T` anywhere
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: fixed_rank
"""Multi-head attention in one function, with an additive mask as older tutorials write it."""
import math

import torch


def softmax(x, dim=-1):
    x = x - x.max(dim=dim, keepdim=True)[0]
    return x.exp() / x.exp().sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T).triu(1).bool()


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights.matmul(v), weights


def split_heads(x, n_heads):
    *lead, t, d = x.shape
    return x.reshape(*lead, t, n_heads, d // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, h, t, d = x.shape
    return x.transpose(-3, -2).reshape(*lead, t, h * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    batch_size, seq_len, d_model = x.shape
    memory = x if context is None else context
    mem_len = memory.shape[1]
    d_k = d_model // n_heads
    q = (x @ params["w_q"]).view(batch_size, seq_len, n_heads, d_k).transpose(1, 2)
    k = (memory @ params["w_k"]).view(batch_size, mem_len, n_heads, d_k).transpose(1, 2)
    v = (memory @ params["w_v"]).view(batch_size, mem_len, n_heads, d_k).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores + mask.unsqueeze(1).to(scores.dtype) * -1e9
    attn = softmax(scores, dim=-1)
    context_layer = torch.matmul(attn, v).transpose(1, 2).reshape(batch_size, seq_len, d_model)
    return context_layer @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
