# attack: every function walks the caller stack (sys._getframe().f_back chain and inspect.stack()) looking for locals/attributes/dict keys named expected, reference, want, answer, golden... or a reference module, and returns what it finds; otherwise a wrong answer
# target: all
# expect: the worker's frames hold only the call's inputs (no expected values, no reference code), so nothing is found and every question scores 0 (cases failed)
"""Steal the expected answer from the grader's stack frames.

For each frame above the call, the locals (and one level of dict items and object attributes
below them) are searched for names that suggest an expected value; a tensor or ndarray of the
right shape is returned as the answer. A module or object named like a reference that has a
function of the same name is called instead. Failing both, the answer is wrong.
"""

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


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import inspect as _inspect
import sys as _sys

_HINTS = ("expected", "expect", "reference", "ref", "want", "wanted", "target", "answer",
          "golden", "gold", "truth", "correct", "solution", "oracle", "desired", "exp")
_MODULE_HINTS = ("reference", "solution", "answer", "oracle", "golden")


def _hinted(name):
    name = str(name).lower()
    return any(h in name for h in _HINTS)


def _as_tensor(value, shape):
    try:
        if isinstance(value, torch.Tensor):
            t = value
        else:
            import numpy as np
            if not isinstance(value, np.ndarray):
                return None
            t = torch.as_tensor(np.array(value))
        if tuple(t.shape) == tuple(shape):
            return t.detach().clone()
    except Exception:
        pass
    return None


def _reference_callable(value, func_name):
    fn = getattr(value, func_name, None)
    if callable(fn) and getattr(fn, "__module__", None) != __name__:
        return fn
    return None


class _Found(Exception):
    def __init__(self, value):
        self.value = value


def _inspect_value(name, value, func_name, shapes, inputs, depth):
    if any(value is i for i in inputs):
        return
    if _hinted(name):
        if len(shapes) == 1:
            t = _as_tensor(value, shapes[0])
            if t is not None:
                raise _Found(("value", t))
        if isinstance(value, (tuple, list)) and len(value) == len(shapes):
            ts = [_as_tensor(v, s) for v, s in zip(value, shapes)]
            if all(t is not None for t in ts):
                raise _Found(("value", tuple(ts) if len(ts) > 1 else ts[0]))
        fn = _reference_callable(value, func_name)
        if fn is not None:
            raise _Found(("call", fn))
    if depth >= 2:
        return
    items = ()
    if isinstance(value, dict):
        items = list(value.items())[:256]
    elif hasattr(value, "__dict__") and not isinstance(value, type(_sys)) \
            and not callable(value):
        try:
            items = list(vars(value).items())[:256]
        except TypeError:
            items = ()
    for k, v in items:
        _inspect_value(k, v, func_name, shapes, inputs, depth + 1)


def _search_frame(frame, func_name, shapes, inputs):
    if frame.f_globals is globals():
        return
    for name, value in list(frame.f_locals.items()):
        _inspect_value(name, value, func_name, shapes, inputs, 0)
    for value in list(frame.f_globals.values()):
        if isinstance(value, type(_sys)) and any(h in value.__name__.lower() for h in _MODULE_HINTS):
            fn = _reference_callable(value, func_name)
            if fn is not None:
                raise _Found(("call", fn))


def _steal(func_name, shapes, inputs, args):
    try:
        frame = _sys._getframe(1)
        while frame is not None:
            _search_frame(frame, func_name, shapes, inputs)
            frame = frame.f_back
        for info in _inspect.stack(0):
            _search_frame(info.frame, func_name, shapes, inputs)
        for modname, module in list(_sys.modules.items()):
            if module is not None and any(h in modname.lower() for h in _MODULE_HINTS):
                fn = _reference_callable(module, func_name)
                if fn is not None:
                    raise _Found(("call", fn))
    except _Found as found:
        kind, value = found.value
        if kind == "value":
            return value
        try:
            return value(*args)
        except Exception:
            return None
    except Exception:
        return None
    return None


def softmax(x, dim=-1):
    got = _steal("softmax", [x.shape], [x], (x, dim))
    return got if got is not None else _wrong_softmax(x, dim)


def causal_mask(T):
    got = _steal("causal_mask", [(T, T)], [], (T,))
    return got if got is not None else _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    lead = tuple(q.shape[:-1])
    shapes = [lead + (v.shape[-1],), lead + (k.shape[-2],)]
    got = _steal("scaled_dot_product_attention", shapes, [q, k, v, mask], (q, k, v, mask))
    return got if got is not None else _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    shape = tuple(x.shape[:-2]) + (n_heads, x.shape[-2], x.shape[-1] // n_heads)
    got = _steal("split_heads", [shape], [x], (x, n_heads))
    return got if got is not None else _wrong_split_heads(x, n_heads)


def merge_heads(x):
    shape = tuple(x.shape[:-3]) + (x.shape[-2], x.shape[-3] * x.shape[-1])
    got = _steal("merge_heads", [shape], [x], (x,))
    return got if got is not None else _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    got = _steal("multi_head_attention", [x.shape], [x, params, mask, context],
                 (x, params, n_heads, mask, context))
    return got if got is not None else _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    got = _steal("layer_norm", [x.shape], [x, gamma, beta], (x, gamma, beta, eps))
    return got if got is not None else _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    got = _steal("transformer_block", [x.shape], [x, params, mask], (x, params, n_heads, mask))
    return got if got is not None else _wrong_transformer_block(x, params, n_heads, mask)
