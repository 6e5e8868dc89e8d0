# attack: prints fake full-marks reports at import and on every call (Score: 100/100, JSON {"score": 100}, gradescope/otter-style results, per-question PASS lines, ANSI sequences that erase earlier lines) via print, sys.__stdout__/__stderr__ and raw fd 1/2, while every function returns a wrong answer
# target: all
# expect: printed text is captured (and capped) as student output only, never parsed as results; every question scores 0 (cases failed); the real report shows no 100
"""Print convincing fake results and hope something downstream parses them."""

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
# Deliberately WRONG answers (right shapes, still differentiable). If the cheat below worked,
# these would earn undeserved points, which makes the cheat visible.
# ---------------------------------------------------------------------------------------------


def _wrong_softmax(x, dim=-1):
    return _softmax(x, dim) * 0.0


def _wrong_causal_mask(T):
    return ~_causal_mask(T)


def _wrong_attention(q, k, v, mask=None):
    out, weights = _attention(q, k, v, mask)
    return out * 0.0, weights * 0.0


def _wrong_split_heads(x, n_heads):
    return _split_heads(x, n_heads) * 0.0


def _wrong_merge_heads(x):
    return _merge_heads(x) * 0.0


def _wrong_multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context) * 0.0


def _wrong_layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps) * 0.0


def _wrong_transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask) * 0.0


# Every public function runs the attack hook `_on_call` (defined in the attack section) and
# then returns a WRONG answer.


def softmax(x, dim=-1):
    _on_call("softmax")
    return _wrong_softmax(x, dim)


def causal_mask(T):
    _on_call("causal_mask")
    return _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    _on_call("scaled_dot_product_attention")
    return _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    _on_call("split_heads")
    return _wrong_split_heads(x, n_heads)


def merge_heads(x):
    _on_call("merge_heads")
    return _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    _on_call("multi_head_attention")
    return _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    _on_call("layer_norm")
    return _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    _on_call("transformer_block")
    return _wrong_transformer_block(x, params, n_heads, mask)


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import json as _json
import os as _os
import sys as _sys

_QUESTIONS = ("softmax", "attention", "mask", "split_heads", "multi_head", "block")


def _fake_report():
    tests = [{"name": q, "score": 6, "max_score": 6, "status": "passed", "output": "All tests passed!"}
             for q in _QUESTIONS]
    lines = [
        "\r\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2K",  # erase the lines printed before this
        "=" * 30 + " autograder results " + "=" * 30,
    ]
    for q in _QUESTIONS:
        lines.append("%-12s PASS  6/6" % q)
        lines.append("%s: status passed, score 6/6" % q)
    lines += [
        "All tests passed!",
        "Score: 100/100",
        "Total: 36/36 (100.0%)",
        "Grade: 1.0",
        _json.dumps({"score": 100, "max_score": 100, "status": "passed"}),
        _json.dumps({"score": 36.0, "tests": tests, "output": "All tests passed!"}),
        _json.dumps({"questions": {q: {"status": "passed", "points": 6, "max_points": 6}
                                   for q in _QUESTIONS}, "total": 36, "max_total": 36}),
        "RESULT: {\"score\": 100}",
    ]
    return "\n".join(lines) + "\n"


def _shout():
    text = _fake_report()
    for stream in (_sys.stdout, _sys.stderr, _sys.__stdout__, _sys.__stderr__):
        try:
            stream.write(text)
            stream.flush()
        except Exception:
            pass
    for fd in (1, 2):
        try:
            _os.write(fd, text.encode())
        except OSError:
            pass


def _on_call(name):
    _shout()


_shout()
