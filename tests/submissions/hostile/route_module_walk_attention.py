# attack: multi_head_attention finds a library attention module without naming it, by walking the vars() of torch.ao's modules for an nn.Module class whose forward takes (query, key, value), and drives it through torch.func.functional_call with the student's weights
# target: multi_head
# expect: the computation is refused by where it comes from (library code composing the attention), whatever name led to it: multi_head gets status forbidden call and 0 points; the other questions pass
"""A library attention module found by walking vars(), never named."""

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


# --- the attack ------------------------------------------------------------------------------

import inspect
import types

import torch.ao.nn
from torch.func import functional_call


def _find():
    """The first nn.Module class under torch.ao.nn whose forward reads (query, key, value)
    and whose float version keeps separate Q, K and V projections."""
    todo, seen = [torch.ao.nn], set()
    while todo:
        module = todo.pop(0)
        if id(module) in seen:
            continue
        seen.add(id(module))
        for value in vars(module).values():
            if isinstance(value, types.ModuleType) and value.__name__.startswith(module.__name__):
                todo.append(value)
            elif isinstance(value, type) and issubclass(value, torch.nn.Module):
                params = list(inspect.signature(value.forward).parameters)[1:4]
                if params == ["query", "key", "value"] and hasattr(value, "_forward_impl"):
                    return value
    raise LookupError


_FOUND = _find()


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    d = x.shape[-1]
    module = _FOUND(d, n_heads, bias=False, dtype=x.dtype)
    weights = {}
    for key, w in (("Q", "w_q"), ("K", "w_k"), ("V", "w_v")):
        weights[f"linear_{key}.weight"] = params[w].T
    weights["out_proj.weight"] = params["w_o"].T
    lead = x.shape[:-2]
    # (length, batch, features), the layout the library module reads
    q = x.reshape(-1, *x.shape[-2:]).transpose(0, 1)
    kv = source.reshape(-1, *source.shape[-2:]).transpose(0, 1)
    if mask is not None:   # one (length, source length) mask per batch entry and head
        full = mask.expand(*lead, n_heads, x.shape[-2], source.shape[-2])
        mask = full.reshape(-1, x.shape[-2], source.shape[-2])
    out, _ = functional_call(module, weights, (q, kv, kv),
                             {"attn_mask": mask, "need_weights": False})
    return out.transpose(0, 1).reshape(*lead, *x.shape[-2:])
