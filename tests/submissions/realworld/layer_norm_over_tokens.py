# assignment: attention
# mistake: a beginner's layer norm that averages over the tokens (dim=-2) instead of each token's features, mixing batch-norm and layer-norm
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head
# diagnosis: layer_norm_wrong_axis
"""Transformer pieces, first attempt."""
import math

import torch


def softmax(x, dim=-1):
    e = torch.exp(x - torch.amax(x, dim=dim, keepdim=True))
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, torch.transpose(k, -2, -1)) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, -1)
    return torch.matmul(weights, v), weights


def split_heads(x, n_heads):
    return x.unflatten(-1, (n_heads, x.shape[-1] // n_heads)).transpose(-2, -3)


def merge_heads(x):
    return x.transpose(-2, -3).flatten(-2, -1)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    heads, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                            split_heads(src @ params["w_k"], n_heads),
                                            split_heads(src @ params["w_v"], n_heads), mask)
    return merge_heads(heads) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    # normalise every feature over the sequence
    mean = x.mean(dim=-2, keepdim=True)
    var = x.var(dim=-2, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    return layer_norm(h + torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"]
                      + params["b2"], params["ln2_gamma"], params["ln2_beta"])
