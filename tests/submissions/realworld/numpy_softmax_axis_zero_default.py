# assignment: attention_numpy
# mistake: softmax(x, axis=0): a fixed index as the default, so every call without an axis (attention's) normalises the columns of the score table instead of its rows
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads, concepts
# diagnosis: softmax_default_axis
"""Lesson-style NumPy attention."""
import numpy as np


def softmax(x, axis=0):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(T):
    rows, cols = np.indices((T, T))
    return cols > rows


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[-1]
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / np.float32(d) ** 0.5
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores)
    return np.matmul(weights, v), weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d_model // n_heads), -3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    q, k, v = (split_heads(a @ params[w], n_heads)
               for a, w in ((x, "w_q"), (src, "w_k"), (src, "w_v")))
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = np.maximum(0, h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1.0
shuffling_changes_more_than_order = False
