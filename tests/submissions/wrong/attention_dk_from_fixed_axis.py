# mistake: attention takes d_k as q.shape[1], which is the key size only for 2-D inputs; with batch or head dimensions it scales by the wrong number
# loses: attention, mask, multi_head, block
# keeps: softmax, split_heads
# hint: scale
# diagnosis: dk_from_fixed_axis
# Translated line by line from the lesson's NumPy version.
import numpy as np
import torch


def softmax(x, dim=-1):
    e = torch.exp(x - torch.max(x, dim=dim, keepdim=True)[0])
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.from_numpy(np.triu(np.ones((T, T), dtype=bool), 1))


def scaled_dot_product_attention(q, k, v, mask=None):
    d = q.shape[1]
    scores = q @ k.transpose(-1, -2) / np.sqrt(d)
    if mask is not None:
        scores = torch.where(mask, torch.tensor(float("-inf"), dtype=scores.dtype), scores)
    weights = softmax(scores)
    return weights @ v, weights


def split_heads(x, n_heads):
    T, d_model = x.shape[-2:]
    x = x.reshape(x.shape[:-2] + (T, n_heads, d_model // n_heads))
    return x.swapaxes(-3, -2)


def merge_heads(x):
    n_heads, T, d_head = x.shape[-3:]
    return x.swapaxes(-3, -2).reshape(x.shape[:-3] + (T, n_heads * d_head))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if context is None:
        context = x
    Q = split_heads(x @ params["w_q"], n_heads)
    K = split_heads(context @ params["w_k"], n_heads)
    V = split_heads(context @ params["w_v"], n_heads)
    out, _ = scaled_dot_product_attention(Q, K, V, mask)
    return merge_heads(out) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    f = torch.maximum(h @ params["w1"] + params["b1"], torch.zeros_like(h @ params["w1"]))
    f = f @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])
