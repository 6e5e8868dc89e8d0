# assignment: attention
# mistake: multi-head attention written for (B, T, C) inputs with scores from `k.transpose(2, 3)` and a padding-mask `mask.unsqueeze(1)`: unbatched inputs fail at the unpack, and a causal mask fails at the masking line (no `.T` anywhere)
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: fixed_rank
"""Multi-head attention in one function, as many blog posts write it."""
import math

import torch


def softmax(x, dim=-1):
    z = x - torch.amax(x, dim=dim, keepdim=True)
    return torch.exp(z) / torch.exp(z).sum(dim=dim, keepdim=True)


def causal_mask(T):
    return ~torch.tril(torch.ones(T, T, dtype=torch.bool))


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    p = softmax(scores, dim=-1)
    return p @ v, p


def split_heads(x, n_heads):
    return x.unflatten(-1, (n_heads, x.shape[-1] // n_heads)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(start_dim=-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    B, T, C = x.shape
    kv = x if context is None else context
    S = kv.shape[1]
    d = C // n_heads
    q = (x @ params["w_q"]).view(B, T, n_heads, d).transpose(1, 2)
    k = (kv @ params["w_k"]).view(B, S, n_heads, d).transpose(1, 2)
    v = (kv @ params["w_v"]).view(B, S, n_heads, d).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(mask.unsqueeze(1), float("-inf"))
    weights = softmax(scores, dim=-1)
    out = torch.matmul(weights, v).transpose(1, 2).contiguous().view(B, T, C)
    return out @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).square().mean(-1, keepdim=True)
    return (x - mean) / (var + eps).sqrt() * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])
