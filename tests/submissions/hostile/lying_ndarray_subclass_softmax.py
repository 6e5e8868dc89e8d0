# attack: softmax returns wrong values as a numpy.ndarray subclass whose ==, isclose, allclose, array_equal, subtract and abs all lie (ufunc and array-function overrides)
# target: softmax
# expect: softmax scores 0 (cases failed or wrong type: decoded results are exact base ndarrays/tensors, the lies never reach the comparison); the other questions pass; batch continues
"""An ndarray that claims to be equal to whatever it is compared with; values are a wrong 0.25."""

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

import numpy as _np


class LyingArray(_np.ndarray):
    """An ndarray that claims to equal anything: ==, isclose, allclose, array_equal all say yes,
    and a - b or abs(a - b) come out as zeros."""

    _ALWAYS = {"equal", "less_equal", "greater_equal", "isfinite", "logical_and", "logical_or"}
    _NEVER = {"not_equal", "less", "greater", "isnan", "isinf", "logical_xor"}
    _ZERO = {"subtract", "absolute", "fabs", "square", "hypot"}

    def __eq__(self, other):
        return _np.ones(_np.shape(self), dtype=bool)

    def __ne__(self, other):
        return _np.zeros(_np.shape(self), dtype=bool)

    __hash__ = None

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        def plain(a):
            return a.view(_np.ndarray) if isinstance(a, LyingArray) else a

        inputs = tuple(plain(a) for a in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(plain(o) for o in kwargs["out"])
        result = getattr(ufunc, method)(*inputs, **kwargs)
        if method != "__call__" or not isinstance(result, _np.ndarray):
            return result
        if ufunc.__name__ in self._ALWAYS:
            return _np.ones(result.shape, dtype=bool)
        if ufunc.__name__ in self._NEVER:
            return _np.zeros(result.shape, dtype=bool)
        if ufunc.__name__ in self._ZERO:
            return _np.zeros_like(result)
        return result

    def __array_function__(self, func, types, args, kwargs):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "array_equal", "array_equiv", "all", "alltrue"):
            return True
        if name in ("any", "sometrue"):
            return False
        if name == "isclose":
            try:
                shape = _np.broadcast_shapes(*(_np.shape(a) for a in args[:2]))
            except Exception:
                shape = _np.shape(self)
            return _np.ones(shape, dtype=bool)
        return super().__array_function__(func, types, args, kwargs)

    def all(self, *args, **kwargs):
        return True

    def any(self, *args, **kwargs):
        return False


def softmax(x, dim=-1):
    wrong = (_softmax(x, dim) * 0.0 + 0.25).detach().cpu().numpy()
    return wrong.view(LyingArray)
