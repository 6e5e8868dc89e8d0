# assignment: attention_numpy
# mistake: softmax(x, axis=None) normalises the whole array when called without an axis (right whenever the axis is given); the attention class calls it without one
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads, concepts
# diagnosis: softmax_default_axis
"""Attention as small NumPy classes, the functions the assignment asks for built on them."""
import numpy as np


def softmax(x, axis=None):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


class ScaledDotProductAttention:
    def __init__(self, mask=None):
        self.mask = mask

    def __call__(self, q, k, v):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]).astype(q.dtype)
        if self.mask is not None:
            scores = np.where(self.mask, -np.inf, scores)
        weights = softmax(scores)
        return weights @ v, weights


def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), k=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    return ScaledDotProductAttention(mask)(q, k, v)


def split_heads(x, n_heads):
    *lead, T, d = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d // n_heads), -2, -3)


def merge_heads(x):
    *lead, h, T, d = x.shape
    return np.swapaxes(x, -2, -3).reshape(*lead, T, h * d)


class MultiHeadAttention:
    def __init__(self, params, n_heads):
        self.params, self.n_heads = params, n_heads

    def __call__(self, x, mask=None, context=None):
        kv = x if context is None else context
        p, h = self.params, self.n_heads
        out, _ = ScaledDotProductAttention(mask)(split_heads(x @ p["w_q"], h),
                                                 split_heads(kv @ p["w_k"], h),
                                                 split_heads(kv @ p["w_v"], h))
        return merge_heads(out) @ p["w_o"]


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return MultiHeadAttention(params, n_heads)(x, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    p = params
    h = layer_norm(x + multi_head_attention(x, p, n_heads, mask), p["ln1_gamma"], p["ln1_beta"])
    f = np.maximum(h @ p["w1"] + p["b1"], 0) @ p["w2"] + p["b2"]
    return layer_norm(h + f, p["ln2_gamma"], p["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1.0
shuffling_changes_more_than_order = False
