# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
"""Einsum for every contraction (projections, scores, the weighted sum), as in many research
codebases; the softmax is exp(x - logsumexp(x)) with no explicit maximum, which is
overflow-safe because torch.logsumexp shifts internally."""
import math

import torch


def softmax(x, dim=-1):
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, -math.inf)
    attn = softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", attn, v), attn


def split_heads(x, n_heads):
    *lead, t, d = x.shape
    return torch.einsum("...thd->...htd", x.reshape(*lead, t, n_heads, d // n_heads))


def merge_heads(x):
    *lead, h, t, d = x.shape
    return torch.einsum("...htd->...thd", x).reshape(*lead, t, h * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    q = torch.einsum("...td,de->...te", x, params["w_q"])
    k = torch.einsum("...td,de->...te", src, params["w_k"])
    v = torch.einsum("...td,de->...te", src, params["w_v"])
    out, _ = scaled_dot_product_attention(split_heads(q, n_heads), split_heads(k, n_heads),
                                          split_heads(v, n_heads), mask)
    return torch.einsum("...td,de->...te", merge_heads(out), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = torch.einsum("...d->...", x)[..., None] / x.shape[-1]
    centred = x - mu
    var = torch.einsum("...d,...d->...", centred, centred)[..., None] / x.shape[-1]
    return centred * torch.rsqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = torch.einsum("...td,df->...tf", h, params["w1"]) + params["b1"]
    ff = torch.einsum("...tf,fd->...td", torch.relu(ff), params["w2"]) + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
