# mistake: multi_head_attention ignores n_heads and runs one attention over the whole d_model (no split into heads), so it is only right with one head
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# hint: head
# diagnosis: mha_no_split
import math

import torch


def softmax(x, dim=-1):
    shifted = x - x.max(dim=dim, keepdim=True).values
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    # TODO: heads; one big head for now
    source = x if context is None else context
    q = x @ params["w_q"]
    k = source @ params["w_k"]
    v = source @ params["w_v"]
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return out @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
