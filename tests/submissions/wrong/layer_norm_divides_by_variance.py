# mistake: layer_norm divides x - mean by var + eps, the variance, instead of its square root, the standard deviation
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: values
# diagnosis: layer_norm_no_sqrt
import math

import torch


def softmax(x, dim=-1):
    m = x.max(dim=dim, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores)
    return weights @ v, weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    heads = [split_heads(t @ params[w], n_heads)
             for t, w in ((x, "w_q"), (src, "w_k"), (src, "w_v"))]
    out, _ = scaled_dot_product_attention(*heads, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    x_hat = (x - mu) / (var + eps)      # normalise the spread
    return gamma * x_hat + beta


def transformer_block(x, params, n_heads, mask=None):
    a = multi_head_attention(x, params, n_heads, mask=mask)
    h = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
