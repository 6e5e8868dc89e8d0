# assignment: attention_numpy
# mistake: split/merge heads as `x.reshape(x.shape[0], -1, n_heads, d_head).transpose(0, 2, 1, 3)`: one (T, d_model) sequence silently gets a wrong shape (its tokens taken as the batch), and merge fails on 3-D heads
# loses: split_heads, multi_head, block
# keeps: softmax, attention, mask, concepts
# diagnosis: fixed_rank
"""NumPy transformer pieces written for a batch of sequences."""
import math

import numpy as np


def softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    ez = np.exp(z)
    return ez / ez.sum(axis=axis, keepdims=True)


def causal_mask(T):
    return np.tri(T, T, k=0, dtype=bool) == False  # noqa: E712


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    w = softmax(scores, axis=-1)
    return np.matmul(w, v), w


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.reshape(x.shape[0], -1, n_heads, d_head).transpose(0, 2, 1, 3)


def merge_heads(x):
    batch, n_heads, _, d_head = x.shape[0], x.shape[1], x.shape[2], x.shape[3]
    return x.transpose(0, 2, 1, 3).reshape(batch, -1, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    ctx = x if context is None else context
    q = split_heads(x @ params["w_q"], n_heads)
    k = split_heads(ctx @ params["w_k"], n_heads)
    v = split_heads(ctx @ params["w_v"], n_heads)
    o, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(o) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    f = np.maximum(0, h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 196 * 196
weights_row_sum = 1
shuffling_changes_more_than_order = False
