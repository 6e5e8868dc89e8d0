# assignment: attention_numpy
# mistake: the common one-line NumPy softmax, np.exp(x - np.max(x)): the maximum of the whole array, so rows far below it underflow to 0/0
# loses: softmax, attention, mask
# keeps: split_heads, multi_head, block, concepts
# diagnosis: softmax_global_max
"""NumPy attention, following a popular blog post's softmax."""
import math

import numpy as np


def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x))
    return e_x / e_x.sum(axis=axis, keepdims=True)


def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.matmul(q, np.swapaxes(k, -2, -1)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return np.matmul(weights, v), weights


def split_heads(x, n_heads):
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d // n_heads), -2, -3)


def merge_heads(x):
    *lead, H, T, d = x.shape
    return np.swapaxes(x, -2, -3).reshape(*lead, T, H * d)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    ctx = x if context is None else context
    out, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                          split_heads(ctx @ params["w_k"], n_heads),
                                          split_heads(ctx @ params["w_v"], n_heads), mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask), params["ln1_gamma"],
                   params["ln1_beta"])
    f = np.maximum(0, h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1
shuffling_changes_more_than_order = False
