# attack: writes ~200 MB each to stdout and stderr at import and ~300 MB each inside the first softmax call (4 MB on later ones), through print/sys.stdout, sys.__stdout__/__stderr__ and raw os.write on fds 1 and 2, including one giant line without a newline
# target: all
# expect: output is capped and truncated (the grader's memory stays bounded and it never blocks on a full pipe); all questions still pass (answers are correct) or, at worst, the flooding call is reported as error for exceeding the output cap; batch continues
"""Hundreds of megabytes of output, through every route to the real file descriptors."""

import math

import torch

# ---------------------------------------------------------------------------------------------
# A correct implementation (the same in every file of this folder). The public functions only
# delegate to private helpers, so an attack that replaces one public function below leaves the
# other questions intact.
# ---------------------------------------------------------------------------------------------


def _softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = torch.exp(shifted)
    return e / torch.sum(e, dim=dim, keepdim=True)


def _causal_mask(T):
    rows = torch.arange(T).unsqueeze(1)
    cols = torch.arange(T).unsqueeze(0)
    return cols > rows


def _attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = _softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def _split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return x.unflatten(-1, (n_heads, d_head)).transpose(-3, -2)


def _merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)


def _multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = _split_heads(x @ params["w_q"], n_heads)
    k = _split_heads(source @ params["w_k"], n_heads)
    v = _split_heads(source @ params["w_v"], n_heads)
    out, _ = _attention(q, k, v, mask)
    return _merge_heads(out) @ params["w_o"]


def _layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dim=-1, keepdim=True)
    return centered / torch.sqrt(var + eps) * gamma + beta


def _transformer_block(x, params, n_heads, mask=None):
    attn = _multi_head_attention(x, params, n_heads, mask)
    h = _layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ffn = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return _layer_norm(h + ffn, params["ln2_gamma"], params["ln2_beta"])


def softmax(x, dim=-1):
    return _softmax(x, dim)


def causal_mask(T):
    return _causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    return _attention(q, k, v, mask)


def split_heads(x, n_heads):
    return _split_heads(x, n_heads)


def merge_heads(x):
    return _merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask)


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import os as _os
import sys as _sys

_MIB = 1 << 20
_LINES = ("X" * 1023 + "\n") * 1024          # 1 MiB of short lines
_GIANT = b"Y" * _MIB                          # 1 MiB chunks of one line with no newline


def _flood(megabytes):
    for _ in range(megabytes):
        for stream in (_sys.stdout, _sys.stderr):
            try:
                stream.write(_LINES)
            except Exception:
                pass
    for _ in range(megabytes // 2):
        for stream in (_sys.__stdout__, _sys.__stderr__):
            try:
                stream.write(_LINES)
            except Exception:
                pass
    for _ in range(megabytes // 2):
        for fd in (1, 2):
            try:
                _os.write(fd, _GIANT)
            except OSError:
                pass


_flooded_in_call = []


def softmax(x, dim=-1):
    if not _flooded_in_call:
        _flooded_in_call.append(True)
        _flood(300)
    else:
        _flood(4)
    return _softmax(x, dim)


_flood(200)
