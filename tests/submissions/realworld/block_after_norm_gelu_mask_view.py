# assignment: attention
# mistake: multi-head attention for (B, T, C) inputs that reshapes the mask as a padding mask, `mask.view(B, 1, 1, T)`, so every block case fails inside it; the block itself adds each residual after the layer norm and uses GELU
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# diagnosis: fixed_rank, residual_after_norm, ffn_gelu
"""An encoder layer in the style of small transformer repositories."""
import math

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    w = (q @ k.transpose(-1, -2)) / math.sqrt(k.shape[-1])
    if mask is not None:
        w = w.masked_fill(mask, float("-inf"))
    w = softmax(w, dim=-1)
    return w @ v, w


def split_heads(x, n_heads):
    *b, t, c = x.shape
    return x.view(*b, t, n_heads, c // n_heads).transpose(-2, -3)


def merge_heads(x):
    *b, h, t, d = x.shape
    return x.transpose(-2, -3).reshape(*b, t, h * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    B, T, C = x.shape
    ctx = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(ctx @ params["w_k"], n_heads)
    v = split_heads(ctx @ params["w_v"], n_heads)
    if mask is not None:
        mask = mask.view(B, 1, 1, -1)
    y, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(y) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask=mask)
    x = x + layer_norm(attn, params["ln1_gamma"], params["ln1_beta"])
    ff = F.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return x + layer_norm(ff, params["ln2_gamma"], params["ln2_beta"])
