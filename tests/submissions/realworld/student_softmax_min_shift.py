# assignment: attention
# mistake: a student's softmax that subtracts the row minimum ("to keep the exponents positive"): right on small inputs, inf/inf = NaN on large ones
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads
# diagnosis: softmax_subtracts_min
"""My attention assignment."""
import math

import torch


def softmax(x, dim=-1):
    # shift so every exponent is >= 0
    lowest = x.min(dim=dim, keepdim=True).values
    ex = torch.exp(x - lowest)
    return ex / ex.sum(dim=dim, keepdim=True)


def causal_mask(T):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(i + 1, T):
            mask[i, j] = True
    return mask


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    scores = scores / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores)
    output = weights @ v
    return output, weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    x = x.reshape(x.shape[:-1] + (n_heads, d_head))
    return x.transpose(-2, -3)


def merge_heads(x):
    x = x.transpose(-2, -3)
    return x.reshape(x.shape[:-2] + (-1,))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if context is None:
        context = x
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(context @ params["w_k"], n_heads)
    v = split_heads(context @ params["w_v"], n_heads)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    h = x + multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(h, params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"])
    ffn = ffn @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
