# attack: every function scans gc.get_objects() (and the values of every tracked dict/list/tuple) for tensors or ndarrays with the expected output shape that are not its own inputs, and returns them; otherwise a wrong answer
# target: all
# expect: the worker's heap holds no expected outputs, so whatever is found is unrelated data; every question scores 0 (cases failed, or timed out: the scan is slow)
"""Steal an answer-shaped tensor from anywhere in the worker's heap.

Tensors are tracked by the garbage collector; ndarrays are not, so containers are searched one
level deep too. Anything equal to one of the call's inputs is skipped.
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

import gc as _gc


def _to_tensor(obj):
    if isinstance(obj, torch.Tensor):
        return obj
    try:
        import numpy as np
        if isinstance(obj, np.ndarray) and obj.dtype.kind in "fcib":
            return torch.as_tensor(np.array(obj))
    except Exception:
        pass
    return None


def _same_as_input(t, inputs):
    for i in inputs:
        if t is i:
            return True
        if isinstance(i, torch.Tensor) and i.shape == t.shape:
            try:
                if torch.equal(i.detach(), t.detach().to(i.dtype)):
                    return True
            except Exception:
                pass
    return False


def _gc_find(shapes, inputs):
    found = [None] * len(shapes)
    own = set()

    def consider(obj):
        if not isinstance(obj, torch.Tensor) and type(obj).__name__ != "ndarray":
            return
        if id(obj) in own:
            return
        t = _to_tensor(obj)
        if t is None:
            return
        for i, shape in enumerate(shapes):
            if found[i] is None and tuple(t.shape) == tuple(shape) and not _same_as_input(t, inputs):
                found[i] = t.detach().clone()
                own.add(id(obj))
                return

    try:
        for obj in _gc.get_objects():
            consider(obj)
            if isinstance(obj, dict):
                for v in list(obj.values())[:1000]:
                    consider(v)
            elif isinstance(obj, (list, tuple)):
                for v in list(obj[:1000]):
                    consider(v)
            if all(f is not None for f in found):
                break
    except Exception:
        pass
    if all(f is not None for f in found):
        return found
    return None


def softmax(x, dim=-1):
    got = _gc_find([x.shape], [x])
    return got[0] if got else _wrong_softmax(x, dim)


def causal_mask(T):
    got = _gc_find([(T, T)], [])
    return got[0].bool() if got else _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    lead = tuple(q.shape[:-1])
    got = _gc_find([lead + (v.shape[-1],), lead + (k.shape[-2],)], [q, k, v])
    return tuple(got) if got else _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    shape = tuple(x.shape[:-2]) + (n_heads, x.shape[-2], x.shape[-1] // n_heads)
    got = _gc_find([shape], [x])
    return got[0] if got else _wrong_split_heads(x, n_heads)


def merge_heads(x):
    shape = tuple(x.shape[:-3]) + (x.shape[-2], x.shape[-3] * x.shape[-1])
    got = _gc_find([shape], [x])
    return got[0] if got else _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    got = _gc_find([x.shape], [x] + list(params.values()))
    return got[0] if got else _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    got = _gc_find([x.shape], [x, gamma, beta])
    return got[0] if got else _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    got = _gc_find([x.shape], [x] + list(params.values()))
    return got[0] if got else _wrong_transformer_block(x, params, n_heads, mask)
