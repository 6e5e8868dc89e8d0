# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
"""Written like a PyTorch module: weights kept in nn.Linear's (out, in) layout and applied with
F.linear, so the contract's `x @ w` weights are transposed once at the boundary."""
import math

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    z = x - x.max(dim=dim, keepdim=True).values
    num = z.exp()
    return num / num.sum(dim=dim, keepdim=True)


def causal_mask(T):
    i = torch.arange(T)
    return i[None, :] > i[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.size(-1)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    p_attn = softmax(scores, dim=-1)
    return torch.matmul(p_attn, v), p_attn


def split_heads(x, n_heads):
    d_k = x.size(-1) // n_heads
    return x.unflatten(-1, (n_heads, d_k)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def _linear_weight(w):
    """nn.Linear stores (out_features, in_features) and computes x @ W.T."""
    return w.t()


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    query = split_heads(F.linear(x, _linear_weight(params["w_q"])), n_heads)
    key = split_heads(F.linear(kv, _linear_weight(params["w_k"])), n_heads)
    value = split_heads(F.linear(kv, _linear_weight(params["w_v"])), n_heads)
    out, _ = scaled_dot_product_attention(query, key, value, mask=mask)
    return F.linear(merge_heads(out), _linear_weight(params["w_o"]))


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return gamma * (x - mean) / torch.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask=mask)
    x = layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    hidden = F.relu(F.linear(x, params["w1"].t(), params["b1"]))
    ff = F.linear(hidden, params["w2"].t(), params["b2"])
    return layer_norm(x + ff, params["ln2_gamma"], params["ln2_beta"])
