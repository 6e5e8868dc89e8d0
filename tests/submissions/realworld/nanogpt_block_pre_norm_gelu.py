# assignment: attention
# mistake: the block of a GPT-2-style tutorial: pre-norm, GELU in the MLP, and `B, T, C = x.size()` to shape the residual path, so an unbatched input fails and a batched one gets two wrong formulas
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# diagnosis: fixed_rank, pre_norm, ffn_gelu
"""Attention and a transformer block, written the way small GPT tutorials write them."""
import math

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    x_max = torch.amax(x, dim=dim, keepdim=True)
    unnormalized = torch.exp(x - x_max)
    return unnormalized / unnormalized.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T).triu(diagonal=1).bool()


def scaled_dot_product_attention(q, k, v, mask=None):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask, float("-inf"))
    att = softmax(att, dim=-1)
    return att @ v, att


def split_heads(x, n_heads):
    hs = x.size(-1) // n_heads
    return x.unflatten(-1, (n_heads, hs)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(kv @ params["w_k"], n_heads)
    v = split_heads(kv @ params["w_v"], n_heads)
    y, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(y) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    B, T, C = x.size()
    ln_1 = layer_norm(x, params["ln1_gamma"], params["ln1_beta"])
    x = x + multi_head_attention(ln_1, params, n_heads, mask).view(B, T, C)
    ln_2 = layer_norm(x, params["ln2_gamma"], params["ln2_beta"])
    mlp = F.gelu(ln_2 @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return x + mlp
