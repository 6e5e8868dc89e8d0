# mistake: causal_mask uses triu(2), leaving the next position visible to every query (not in the catalogue: no mistake should be named)
# loses: mask
# keeps: softmax, attention, split_heads, multi_head, block
# hint: diagonal
# diagnosis: none
"""Attention assignment -- uses log-sum-exp for a stable softmax."""
import math

import torch


def softmax(x, dim=-1):
    """softmax(x) = exp(x - logsumexp(x)).

    The row max is removed first so that the log-normaliser stays small
    (otherwise float32 rounding of a ~1e4 logsumexp costs ~1e-3 accuracy).
    """
    shifted = x - x.amax(dim=dim, keepdim=True)
    log_z = torch.logsumexp(shifted, dim=dim, keepdim=True)
    return torch.exp(shifted - log_z)


def causal_mask(T):
    """Boolean (T, T) mask, True where j > i (the future)."""
    ones = torch.ones((T, T), dtype=torch.bool)
    return ones.triu(2)


def scaled_dot_product_attention(q, k, v, mask=None):
    """Returns (output, attention weights)."""
    scale = 1.0 / math.sqrt(k.size(-1))
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if mask is not None:
        neg_inf = torch.full((), float("-inf"), dtype=scores.dtype)
        scores = torch.where(mask, neg_inf, scores)
    attn = softmax(scores, dim=-1)
    output = torch.matmul(attn, v)
    return output, attn


def split_heads(x, n_heads):
    T, d_model = x.shape[-2], x.shape[-1]
    d_head = d_model // n_heads
    new_shape = x.shape[:-1] + (n_heads, d_head)
    return x.reshape(new_shape).transpose(-2, -3)


def merge_heads(x):
    n_heads, T, d_head = x.shape[-3:]
    y = x.transpose(-2, -3).contiguous()
    return y.view(*x.shape[:-3], T, n_heads * d_head)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv_source = x if context is None else context
    Q = torch.matmul(x, params["w_q"])
    K = torch.matmul(kv_source, params["w_k"])
    V = torch.matmul(kv_source, params["w_v"])
    heads, _attn = scaled_dot_product_attention(
        split_heads(Q, n_heads), split_heads(K, n_heads), split_heads(V, n_heads), mask=mask
    )
    return torch.matmul(merge_heads(heads), params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    centered = x - mu
    var = (centered * centered).mean(-1, keepdim=True)  # biased variance
    return gamma * centered / torch.sqrt(var + eps) + beta


def feed_forward(h, params):
    hidden = torch.relu(torch.matmul(h, params["w1"]) + params["b1"])
    return torch.matmul(hidden, params["w2"]) + params["b2"]


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask=mask),
                   params["ln1_gamma"], params["ln1_beta"])
    return layer_norm(h + feed_forward(h, params), params["ln2_gamma"], params["ln2_beta"])
