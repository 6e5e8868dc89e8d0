# attack: multi_head_attention drives torch.ao.nn.quantizable.MultiheadAttention (a float module whose forward uses only linear, bmm and softmax, all allowed in multi_head) through torch.func.functional_call with the student's own weights
# target: multi_head
# expect: a library module computing the attention the question forbids is refused by where the computation comes from (library code composing it), not by its name: multi_head gets status forbidden call and 0 points; the other questions pass
"""The quantizable library MultiheadAttention, fed the student's weights."""

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

from torch.ao.nn.quantizable import MultiheadAttention as _Library
from torch.func import functional_call


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    d = x.shape[-1]
    module = _Library(d, n_heads, bias=False, dtype=x.dtype)
    weights = {"linear_Q.weight": params["w_q"].T, "linear_K.weight": params["w_k"].T,
               "linear_V.weight": params["w_v"].T, "out_proj.weight": params["w_o"].T}
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
