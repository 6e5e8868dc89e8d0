# mistake: attention multiplies the queries by the keys as they are, q @ k, without swapping the keys' last two axes: it fails whenever d_k differs from the number of keys
# loses: attention, mask, multi_head, block
# keeps: softmax, split_heads, concepts
# hint: shape
# diagnosis: keys_not_transposed
import math

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(T: int) -> np.ndarray:
    return np.triu(np.ones((T, T), dtype=bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = np.matmul(q, k) / math.sqrt(d_k)    # every query against every key
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    *lead, T, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d_model // n_heads), -3, -2)


def merge_heads(x: np.ndarray) -> np.ndarray:
    *lead, n_heads, T, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(source @ params["w_k"], n_heads)
    v = split_heads(source @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = np.maximum(h @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


# Knowledge checks (question `concepts`).
head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1
shuffling_changes_more_than_order = False
