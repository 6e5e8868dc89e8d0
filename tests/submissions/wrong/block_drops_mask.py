# mistake: transformer_block accepts a mask but calls multi_head_attention without it, so a masked block attends to the future
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# hint: mask
# diagnosis: block_drops_mask
import math

import torch
import torch.nn.functional as F


def softmax(x, dim=-1):
    shifted = x - x.max(dim=dim, keepdim=True).values.detach()
    ex = torch.exp(shifted)
    return ex / ex.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return ~torch.ones(T, T, dtype=torch.bool).tril()


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = softmax(scores, dim=-1)
    return weights.matmul(v), weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    context = x if context is None else context
    q = split_heads(x.matmul(params["w_q"]), n_heads)
    k = split_heads(context.matmul(params["w_k"]), n_heads)
    v = split_heads(context.matmul(params["w_v"]), n_heads)
    heads, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(heads).matmul(params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, correction=0)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads),
                   params["ln1_gamma"], params["ln1_beta"])
    ff = F.relu(h.matmul(params["w1"]) + params["b1"]).matmul(params["w2"]) + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
