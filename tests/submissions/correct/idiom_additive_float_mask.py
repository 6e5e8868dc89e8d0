# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
"""An additive float mask: the bool mask becomes a bias of -1e9 where blocked, added to the
scores (the form of many Hugging Face-era codebases, with a fill far below any score)."""
import math

import torch

NEG = -1e9


def softmax(x, dim=-1):
    shift = x.detach().amax(dim=dim, keepdim=True)
    ex = (x - shift).exp()
    return ex / ex.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.ones(T, T).triu(1).bool()


def _bias(mask, like):
    return mask.to(like.dtype) * NEG


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q.matmul(k.transpose(-2, -1)).div(math.sqrt(q.size(-1)))
    if mask is not None:
        scores = scores + _bias(mask, scores)
    probs = softmax(scores, dim=-1)
    return probs.matmul(v), probs


def split_heads(x, n_heads):
    shape = x.shape[:-1] + (n_heads, x.shape[-1] // n_heads)
    return x.reshape(shape).movedim(-2, -3)


def merge_heads(x):
    y = x.movedim(-3, -2)
    return y.reshape(y.shape[:-2] + (-1,))


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    kv = x if context is None else context
    q = split_heads(x.matmul(params["w_q"]), n_heads)
    k = split_heads(kv.matmul(params["w_k"]), n_heads)
    v = split_heads(kv.matmul(params["w_v"]), n_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)[0]).matmul(params["w_o"])


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) * (var + eps).rsqrt() * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    y = layer_norm(x + multi_head_attention(x, params, n_heads, mask=mask),
                   params["ln1_gamma"], params["ln1_beta"])
    z = torch.relu(y.matmul(params["w1"]) + params["b1"]).matmul(params["w2"]) + params["b2"]
    return layer_norm(y + z, params["ln2_gamma"], params["ln2_beta"])
