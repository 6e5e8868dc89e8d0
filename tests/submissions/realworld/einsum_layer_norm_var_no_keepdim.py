# assignment: attention
# mistake: layer norm keeps the mean's dimension but takes the variance without keepdim=True, so (..., T) divides (..., T, d) along the wrong axis: a shape error, or wrong values when T == d
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# diagnosis: layer_norm_no_keepdim
"""Everything in einsum notation."""
import math

import torch


def softmax(x, dim=-1):
    x = x - x.amax(dim, keepdim=True)
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def causal_mask(T):
    i = torch.arange(T)
    return i.unsqueeze(0) > i.unsqueeze(1)


def scaled_dot_product_attention(q, k, v, mask=None):
    s = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    a = softmax(s, -1)
    return torch.einsum("...ij,...jd->...id", a, v), a


def split_heads(x, n_heads):
    x = x.reshape(*x.shape[:-1], n_heads, x.shape[-1] // n_heads)
    return torch.einsum("...thd->...htd", x)


def merge_heads(x):
    x = torch.einsum("...htd->...thd", x)
    return x.reshape(*x.shape[:-2], -1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    c = x if context is None else context
    q = split_heads(torch.einsum("...i,ij->...j", x, params["w_q"]), n_heads)
    k = split_heads(torch.einsum("...i,ij->...j", c, params["w_k"]), n_heads)
    v = split_heads(torch.einsum("...i,ij->...j", c, params["w_v"]), n_heads)
    o, _ = scaled_dot_product_attention(q, k, v, mask)
    return torch.einsum("...i,ij->...j", merge_heads(o), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    p = params
    h = layer_norm(x + multi_head_attention(x, p, n_heads, mask), p["ln1_gamma"], p["ln1_beta"])
    f = torch.einsum("...i,ij->...j", torch.relu(torch.einsum("...i,ij->...j", h, p["w1"])
                                                 + p["b1"]), p["w2"]) + p["b2"]
    return layer_norm(h + f, p["ln2_gamma"], p["ln2_beta"])
