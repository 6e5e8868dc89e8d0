# assignment: attention_numpy
# mistake: the softmax's sum drops the axis (`e.sum(axis=axis)`, keepdims defaults to False), so each row is divided by another row's sum: wrong values on square inputs, a broadcast error on others
# loses: softmax, attention, mask, multi_head, block
# keeps: split_heads, concepts
# diagnosis: softmax_no_keepdim
"""The lesson's NumPy attention, extended to batches."""
import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)


def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -2, -1) / np.sqrt(k.shape[-1], dtype=q.dtype)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return np.moveaxis(x.reshape(*lead, T, n_heads, d_model // n_heads), -2, -3)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return np.moveaxis(x, -3, -2).reshape(*lead, T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    src = x if context is None else context
    out, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                          split_heads(src @ params["w_k"], n_heads),
                                          split_heads(src @ params["w_v"], n_heads), mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    a = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    b = np.maximum(a @ params["w1"] + params["b1"], 0.0).astype(a.dtype) @ params["w2"]
    return layer_norm(a + b + params["b2"], params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1.0
shuffling_changes_more_than_order = False
