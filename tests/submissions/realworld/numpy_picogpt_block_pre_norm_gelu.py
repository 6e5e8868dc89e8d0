# assignment: attention_numpy
# mistake: the block of a tiny NumPy GPT: pre-norm with the tanh GELU in the feed-forward layer, two changes from the post-norm ReLU block asked for
# loses: block
# keeps: softmax, attention, mask, split_heads, multi_head, concepts
# diagnosis: pre_norm, ffn_gelu
"""A GPT-2-style forward pass in plain NumPy, adapted to the course's function names."""
import numpy as np


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi).astype(x.dtype)
                                  * (x + x.dtype.type(0.044715) * x ** 3)))


def softmax(x, axis=-1):
    exp_x = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def causal_mask(T):
    return ~np.tri(T, dtype=bool)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.dtype.type(q.shape[-1]) ** 0.5
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    w = softmax(scores)
    return w @ v, w


def split_heads(x, n_heads):
    return np.swapaxes(np.reshape(x, x.shape[:-1] + (n_heads, -1)), -3, -2)


def merge_heads(x):
    x = np.swapaxes(x, -3, -2)
    return np.reshape(x, x.shape[:-2] + (-1,))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q, k, v = (split_heads(a @ params[w], n_heads)
               for a, w in ((x, "w_q"), (kv, "w_k"), (kv, "w_v")))
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(variance + eps) + beta


def ffn(x, params):
    return gelu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def transformer_block(x, params, n_heads, mask=None):
    x = x + multi_head_attention(layer_norm(x, params["ln1_gamma"], params["ln1_beta"]),
                                 params, n_heads, mask)
    x = x + ffn(layer_norm(x, params["ln2_gamma"], params["ln2_beta"]), params)
    return x


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 196 * 196
weights_row_sum = 1
shuffling_changes_more_than_order = False
