# assignment: attention
# mistake: softmax subtracts `x.max(dim=dim).values`, which drops the reduced dimension (keepdim defaults to False), so the maxima broadcast against the wrong axis: wrong values on square inputs, a shape error on others
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads
# diagnosis: softmax_no_keepdim
"""Attention in plain PyTorch, a softmax written from the formula."""
import math

import torch


def softmax(x, dim=-1):
    shifted = x - x.max(dim=dim).values
    exps = torch.exp(shifted)
    return exps / exps.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.shape[-1]
    logits = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        logits = logits.masked_fill(mask, float("-inf"))
    weights = softmax(logits, dim=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-2, -3)


def merge_heads(x):
    return x.transpose(-2, -3).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    heads, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                            split_heads(kv @ params["w_k"], n_heads),
                                            split_heads(kv @ params["w_v"], n_heads), mask)
    return merge_heads(heads) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    sigma2 = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mu) * torch.rsqrt(sigma2 + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    f = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
