# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
# idioms: the feed-forward activation looked up by name (`getattr(F, activation)` with
# activation="relu", a parameter of the student's own), functools.partial, operator.itemgetter,
# torch.manual_seed and warnings.filterwarnings at import
import functools
import math
import operator
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(0)

_WEIGHTS = operator.itemgetter("w_q", "w_k", "w_v", "w_o")


def softmax(x, dim=-1):
    shifted = x - x.amax(dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    idx = torch.arange(T)
    return idx[None, :] > idx[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    over_keys = functools.partial(softmax, dim=-1)     # the weights: over the keys
    weights = over_keys(scores)
    return weights @ v, weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    w_q, w_k, w_v, w_o = _WEIGHTS(params)
    source = x if context is None else context
    q, k, v = (split_heads(t, n_heads) for t in (x @ w_q, source @ w_k, source @ w_v))
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(out) @ w_o


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def _feed_forward(h, params, activation):
    act = getattr(F, activation)        # "relu" here; "gelu" in the follow-up exercise
    return act(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def transformer_block(x, params, n_heads, mask=None, activation="relu"):
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    return layer_norm(h + _feed_forward(h, params, activation),
                      params["ln2_gamma"], params["ln2_beta"])
