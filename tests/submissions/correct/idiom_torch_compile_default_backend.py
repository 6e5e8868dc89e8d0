# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
# idioms: torch.compile with its default compiler (which needs a C++ compiler process where it
# really compiles), as a decorator and as a call: where no compiler may run the functions run as
# written, with the same results
import math

import torch


@torch.compile
def softmax(x, dim=-1):
    # subtract the row max so exp never overflows
    shifted = x - x.max(dim=dim, keepdim=True).values
    e = torch.exp(shifted)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


_compiled_scores = torch.compile(_scores)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = _compiled_scores(q, k)
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
    source = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(source @ params["w_k"], n_heads)
    v = split_heads(source @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


@torch.compile(dynamic=True)
def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
