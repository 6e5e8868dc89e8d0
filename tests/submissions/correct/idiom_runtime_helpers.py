"""Honest idioms that touch nothing of the grader: each must keep full marks and no flag.

getattr on a module with a configured name, functools.partial, operator.itemgetter, a
NamedTuple, inspect.signature of the student's own function, gc.collect, warnings filters,
torch.manual_seed, logging, printing a traceback of a caught error, torch.softmax inside later
questions (allowed there), the student's own earlier functions, and a demo under a main guard.
"""
import functools
import gc
import inspect
import logging
import math
import operator
import sys
import traceback
import typing
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(0)
gc.collect()
logging.getLogger(__name__).debug("loaded")

ACTIVATION = "relu"


class Shapes(typing.NamedTuple):
    batch: tuple
    length: int
    width: int


def softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    # The library softmax is allowed here: only the softmax question asks for one by hand.
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def split_heads(x, n_heads):
    shape = Shapes(tuple(x.shape[:-2]), x.shape[-2], x.shape[-1])
    d_head = shape.width // n_heads
    return x.reshape(*shape.batch, shape.length, n_heads, d_head).transpose(-3, -2)


def merge_heads(x):
    x = x.transpose(-3, -2)
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


_project = functools.partial(torch.matmul)
_weights = operator.itemgetter("w_q", "w_k", "w_v", "w_o")


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    assert "n_heads" in inspect.signature(multi_head_attention).parameters
    source = x if context is None else context
    w_q, w_k, w_v, w_o = _weights(params)
    q = split_heads(_project(x, w_q), n_heads)
    k = split_heads(_project(source, w_k), n_heads)
    v = split_heads(_project(source, w_v), n_heads)
    try:
        out, _ = scaled_dot_product_attention(q, k, v, mask)
    except RuntimeError:
        traceback.print_exc()
        raise
    return merge_heads(out) @ w_o


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    act = getattr(F, ACTIVATION)
    h = layer_norm(x + multi_head_attention(x, params, n_heads, mask),
                   params["ln1_gamma"], params["ln1_beta"])
    ffn = act(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


try:
    raise ValueError("a caught error at import, printed")
except ValueError:
    print(traceback.format_exc())


if __name__ == "__main__":
    x = torch.randn(2, 5)
    print(softmax(x), causal_mask(3))
