# assignment: attention_numpy
# mistake: a NumPy MultiHeadAttention class for (B, T, D) inputs that indexes the mask as a padding mask, `mask[:, None, None, :]`, so every block case fails inside it; the block itself is pre-norm
# loses: multi_head, block
# keeps: softmax, attention, mask, split_heads, concepts
# diagnosis: fixed_rank, pre_norm
"""A NumPy encoder layer built from classes, as in from-scratch transformer repositories."""
import numpy as np


def softmax(x, axis=-1):
    x_max = np.max(x, axis=axis, keepdims=True)
    e_x = np.exp(x - x_max)
    return e_x / np.sum(e_x, axis=axis, keepdims=True)


def causal_mask(T):
    return np.triu(np.ones((T, T), dtype=bool), 1)


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k).astype(q.dtype)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    attn = softmax(scores, axis=-1)
    return attn @ v, attn


def split_heads(x, n_heads):
    *lead, T, d_model = x.shape
    return np.swapaxes(x.reshape(*lead, T, n_heads, d_model // n_heads), -3, -2)


def merge_heads(x):
    *lead, n_heads, T, d_head = x.shape
    return np.swapaxes(x, -3, -2).reshape(*lead, T, n_heads * d_head)


class MultiHeadAttention:
    def __init__(self, params, n_heads):
        self.params = params
        self.n_heads = n_heads

    def forward(self, x, mask=None, context=None):
        B, T, D = x.shape
        kv = x if context is None else context
        q = split_heads(x @ self.params["w_q"], self.n_heads)
        k = split_heads(kv @ self.params["w_k"], self.n_heads)
        v = split_heads(kv @ self.params["w_v"], self.n_heads)
        if mask is not None:
            mask = mask[:, None, None, :]
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return merge_heads(out) @ self.params["w_o"]


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return MultiHeadAttention(params, n_heads).forward(x, mask, context)


class LayerNorm:
    def __init__(self, gamma, beta, eps=1e-5):
        self.gamma, self.beta, self.eps = gamma, beta, eps

    def forward(self, x):
        mean = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        return self.gamma * (x - mean) / np.sqrt(var + self.eps) + self.beta


def layer_norm(x, gamma, beta, eps=1e-5):
    return LayerNorm(gamma, beta, eps).forward(x)


def transformer_block(x, params, n_heads, mask=None):
    attn = MultiHeadAttention(params, n_heads)
    ln1 = LayerNorm(params["ln1_gamma"], params["ln1_beta"])
    ln2 = LayerNorm(params["ln2_gamma"], params["ln2_beta"])
    x = x + attn.forward(ln1.forward(x), mask)
    h = ln2.forward(x)
    return x + np.maximum(h @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38416
weights_row_sum = 1
shuffling_changes_more_than_order = False
