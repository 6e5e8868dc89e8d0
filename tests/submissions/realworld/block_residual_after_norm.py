# assignment: attention
# mistake: a block that normalises each sub-layer's output and then adds the residual, x + norm(f(x)), instead of norm(x + f(x))
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# diagnosis: residual_after_norm
"""Encoder block, written from the diagram of the paper."""
import math

import torch


def softmax(x, dim=-1):
    shifted = x - x.max(dim, keepdim=True).values
    return shifted.exp() / shifted.exp().sum(dim, keepdim=True)


def causal_mask(T):
    rows = torch.arange(T).unsqueeze(1)
    cols = torch.arange(T).unsqueeze(0)
    return cols > rows


def scaled_dot_product_attention(q, k, v, mask=None):
    logits = q @ k.mT / math.sqrt(q.shape[-1])
    if mask is not None:
        logits = logits.masked_fill(mask, torch.finfo(logits.dtype).min)
    w = softmax(logits)
    return w @ v, w


def split_heads(x, n_heads):
    shape = x.shape[:-1] + (n_heads, x.shape[-1] // n_heads)
    return x.reshape(shape).swapaxes(-2, -3)


def merge_heads(x):
    x = x.swapaxes(-2, -3)
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    c = x if context is None else context
    q, k, v = x @ params["w_q"], c @ params["w_k"], c @ params["w_v"]
    o, _ = scaled_dot_product_attention(split_heads(q, n_heads), split_heads(k, n_heads),
                                        split_heads(v, n_heads), mask)
    return merge_heads(o) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    sigma2 = x.var(-1, keepdim=True, correction=0)
    return gamma * (x - mu) * torch.rsqrt(sigma2 + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask)
    x = x + layer_norm(attn, params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return x + layer_norm(ff, params["ln2_gamma"], params["ln2_beta"])
