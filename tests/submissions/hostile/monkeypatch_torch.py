# attack: monkeypatches torch comparisons in the worker (torch.allclose/isclose/equal/eq, torch.testing.assert_close/assert_allclose, Tensor.__eq__/__ne__/allclose/equal/isclose, abs/norm/dist/isnan/all) while every function returns a wrong answer
# target: all
# expect: patches live only in the worker and are never consulted by the trusted comparison; every question scores 0 (cases failed)
"""Make torch say "equal" to everything, inside the process that runs the submission.

Only operations the (wrong) answers themselves do not need are patched, so the functions still
run. The patches are applied at import and re-applied on every call.
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

import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys


class _PatchOnImport(_importlib_abc.MetaPathFinder):
    """Runs a patcher right after a watched module is imported (now or later)."""

    def __init__(self, patchers):
        self.patchers = patchers

    def find_spec(self, name, path=None, target=None):
        patcher = self.patchers.get(name)
        if patcher is None:
            return None
        _sys.meta_path.remove(self)
        try:
            spec = _importlib_util.find_spec(name)
        except Exception:
            spec = None
        finally:
            _sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        original = spec.loader.exec_module

        def exec_module(module, _original=original, _patcher=patcher):
            _original(module)
            try:
                _patcher(module)
            except Exception:
                pass

        spec.loader.exec_module = exec_module
        return spec


def _install_patchers(patchers):
    """Patch the watched modules that are already imported, and the others when they are."""
    for name, patcher in patchers.items():
        module = _sys.modules.get(name)
        if module is not None:
            try:
                patcher(module)
            except Exception:
                pass
    if not any(isinstance(f, _PatchOnImport) for f in _sys.meta_path):
        _sys.meta_path.insert(0, _PatchOnImport(patchers))


def _true(*args, **kwargs):
    return True


def _none(*args, **kwargs):
    return None


def _shape_of(a):
    return tuple(a.shape) if isinstance(a, torch.Tensor) else tuple(torch.as_tensor(a).shape)


def _ones_bool(a, b=None, *args, **kwargs):
    try:
        shape = _shape_of(a) if b is None else torch.broadcast_shapes(_shape_of(a), _shape_of(b))
    except Exception:
        shape = ()
    return torch.ones(shape, dtype=torch.bool)


def _zeros_bool(a, b=None, *args, **kwargs):
    return ~_ones_bool(a, b)


def _zeros_like(a, *args, **kwargs):
    return torch.zeros(_shape_of(a))


def _zero(*args, **kwargs):
    return torch.tensor(0.0)


def _patch_testing(testing):
    for name in ("assert_close", "assert_allclose"):
        if hasattr(testing, name):
            setattr(testing, name, _none)


def _patch_torch():
    T = torch
    for name, fake in (("allclose", _true), ("equal", _true), ("isclose", _ones_bool),
                       ("eq", _ones_bool), ("ne", _zeros_bool), ("isnan", _zeros_bool),
                       ("isinf", _zeros_bool), ("isfinite", _ones_bool), ("abs", _zeros_like),
                       ("dist", _zero), ("norm", _zero),
                       ("all", lambda *a, **k: torch.tensor(True)),
                       ("any", lambda *a, **k: torch.tensor(False))):
        try:
            setattr(T, name, fake)
        except Exception:
            pass
    for name, fake in (("__eq__", _ones_bool), ("__ne__", _zeros_bool), ("eq", _ones_bool),
                       ("ne", _zeros_bool), ("allclose", _true), ("equal", _true),
                       ("isclose", _ones_bool), ("isnan", _zeros_bool), ("isinf", _zeros_bool),
                       ("abs", _zeros_like), ("__abs__", _zeros_like), ("norm", _zero),
                       ("dist", _zero), ("all", lambda *a, **k: torch.tensor(True)),
                       ("any", lambda *a, **k: torch.tensor(False))):
        try:
            setattr(T.Tensor, name, fake)
        except Exception:
            pass
    try:
        T.linalg.norm = _zero
        T.linalg.vector_norm = _zero
    except Exception:
        pass
    _patch_testing(T.testing)
    _install_patchers({
        "torch.testing": _patch_testing,
        "torch.testing._comparison": _patch_testing,
    })


def _on_call(name):
    _patch_torch()


_patch_torch()
