# assignment: attention_numpy
# mistake: a layer norm that takes the mean and variance over axis 0 (the batch, or the tokens of a single sequence), as batch norm does
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head, concepts
# diagnosis: layer_norm_wrong_axis

"""Normalisation layers."""
import math

import numpy as np


def softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    x = x.reshape(*lead, T, n_heads, d_model // n_heads)
    return np.swapaxes(x, -3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    Q = split_heads(x @ params["w_q"], n_heads)
    K = split_heads(source @ params["w_k"], n_heads)
    V = split_heads(source @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(Q, K, V, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = np.mean(x, axis=0, keepdims=True)
    sigma2 = np.var(x, axis=0, keepdims=True)
    x_hat = (x - mu) / np.sqrt(sigma2 + eps)
    return gamma * x_hat + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = np.maximum(h @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])

head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 512 // 8
weights_per_head_196_patches = 196 ** 2
weights_row_sum = 1.0
shuffling_changes_more_than_order = False
