# mistake: causal_mask marks the positions below the diagonal (j < i) instead of above it: the transposed mask, which blocks the past and leaves the future open
# loses: mask
# keeps: softmax, attention, split_heads, multi_head, block
# hint: diagonal
# diagnosis: mask_transposed
import math

import torch


def softmax(x, dim=-1):
    top = x.max(dim=dim, keepdim=True).values
    z = torch.exp(x - top)
    return z / z.sum(dim=dim, keepdim=True)


def causal_mask(T):
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            if j < i:
                mask[i, j] = True
    return mask


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    parts = x.reshape(*x.shape[:-1], n_heads, d_head)
    return parts.transpose(-3, -2)


def merge_heads(x):
    n_heads, d_head = x.shape[-3], x.shape[-1]
    joined = x.transpose(-3, -2)
    return joined.reshape(*joined.shape[:-2], n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    heads = [split_heads(t @ params[w], n_heads)
             for t, w in ((x, "w_q"), (kv, "w_k"), (kv, "w_v"))]
    out, _ = scaled_dot_product_attention(*heads, mask=mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    sigma2 = x.var(-1, keepdim=True, unbiased=False)
    return gamma * (x - mu) / torch.sqrt(sigma2 + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    hidden = torch.relu(h @ params["w1"] + params["b1"])
    return layer_norm(h + hidden @ params["w2"] + params["b2"],
                      params["ln2_gamma"], params["ln2_beta"])
