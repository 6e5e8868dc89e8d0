# assignment: attention_numpy
# mistake: layer norm takes the mean and the standard deviation without keepdims, so (..., T) statistics meet (..., T, d) values along the wrong axis: a broadcast error, or wrong values when T == d
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head, concepts
# diagnosis: layer_norm_no_keepdim
"""NumPy transformer layer, statistics with np.mean and np.std."""
import math

import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_mask(T):
    return np.triu(np.full((T, T), True), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    w = softmax(scores, axis=-1)
    return w @ v, w


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d_model // n_heads), -3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    out, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                          split_heads(src @ params["w_k"], n_heads),
                                          split_heads(src @ params["w_v"], n_heads), mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=-1)
    std = np.sqrt(np.var(x, axis=-1) + eps)
    return gamma * (x - mean) / std + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    f = np.maximum(h @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1.0
shuffling_changes_more_than_order = False
