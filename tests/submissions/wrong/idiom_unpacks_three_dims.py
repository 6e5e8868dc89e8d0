# mistake: multi-head attention unpacks B, T, C = x.size() (a small-GPT idiom), so an unbatched (T, d_model) x or one with two leading dimensions fails
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads
# hint: shape
# diagnosis: fixed_rank
"""Small-GPT style: the heads are split inside multi-head attention with B, T, C = x.size() and
.view(B, T, n_head, C // n_head), which only works for 3-D x."""
import math

import torch
import torch.nn.functional as F

DROPOUT = 0.0


def softmax(x, dim=-1):
    x = x - torch.max(x, dim=dim, keepdim=True)[0]
    e = torch.exp(x)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.tril(torch.ones(T, T)) == 0


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    att = softmax(scores, dim=-1)
    att_dropped = F.dropout(att, p=DROPOUT, training=False)
    return att_dropped @ v, att


def split_heads(x, n_heads):
    head = x.size(-1) // n_heads
    return x.contiguous().view(*x.shape[:-1], n_heads, head).transpose(-2, -3)


def merge_heads(x):
    y = x.transpose(-2, -3).contiguous()
    return y.view(*y.shape[:-2], y.size(-2) * y.size(-1))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    memory = context if context is not None else x
    B, T, C = x.size()
    S = memory.size(1)
    q = (x @ params["w_q"]).view(B, T, n_heads, C // n_heads).transpose(1, 2)
    k = (memory @ params["w_k"]).view(B, S, n_heads, C // n_heads).transpose(1, 2)
    v = (memory @ params["w_v"]).view(B, S, n_heads, C // n_heads).transpose(1, 2)
    y, _ = scaled_dot_product_attention(q, k, v, mask)
    y = y.transpose(1, 2).contiguous().view(B, T, C)
    return y @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return gamma * ((x - mean) / (var + eps).sqrt()) + beta


def transformer_block(x, params, n_heads, mask=None):
    x = layer_norm(x + F.dropout(multi_head_attention(x, params, n_heads, mask), p=DROPOUT,
                                 training=False), params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(x + ff, params["ln2_gamma"], params["ln2_beta"])
