# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block
# hint:
# idioms: torch.utils.checkpoint, torch.fx.symbolic_trace, torch.jit.script, torch.vmap, a
# dataclass, torch.func.functional_call of the student's own module, nn.Linear without bias,
# einsum, printing a tensor inside a graded function, .item() of a shape-derived scalar,
# math.sqrt(q.shape[-1]), logging with exc_info, traceback.print_stack
import dataclasses
import logging
import math
import traceback

import torch
import torch.fx
import torch.utils.checkpoint
from torch import nn
from torch.func import functional_call

log = logging.getLogger(__name__)
_PRINTED = []


@torch.jit.script
def _stable_exp(x: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.exp(x - x.amax(dim=dim, keepdim=True))


def softmax(x, dim=-1):
    if not _PRINTED:
        _PRINTED.append(True)
        print("softmax input:", x)          # leftover debugging output
        traceback.print_stack(limit=2)
    e = _stable_exp(x, dim)
    return e / e.sum(dim=dim, keepdim=True)


def causal_mask(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)


@dataclasses.dataclass
class Scores:
    scale: float

    def __call__(self, q, k):
        return torch.einsum("...qd,...kd->...qk", q, k) / self.scale


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = torch.tensor(q.shape[-1], dtype=torch.float64).item()
    scores = Scores(math.sqrt(q.shape[-1]))(q, k)
    assert d_k == q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights


def _split(x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads).transpose(-3, -2)


def split_heads(x, n_heads):
    # vmap over a flattened batch of sequences, each split on its own
    flat = x.reshape(-1, *x.shape[-2:])
    out = torch.vmap(lambda s: _split(s, n_heads))(flat)
    return out.reshape(*x.shape[:-2], *out.shape[1:])


class _Merge(nn.Module):
    def forward(self, x):
        return x.transpose(-3, -2).flatten(-2)


_merge = torch.fx.symbolic_trace(_Merge())


def merge_heads(x):
    return _merge(x)


class _Projections(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    d = x.shape[-1]
    module = _Projections(d).to(x.dtype)
    weights = {f"{n}.weight": params[f"w_{n}"].T for n in "qkvo"}

    def project(name, t):
        return functional_call(getattr(module, name), {"weight": weights[f"{name}.weight"]},
                               (t,))

    def attend(x, source):
        q = split_heads(project("q", x), n_heads)
        k = split_heads(project("k", source), n_heads)
        v = split_heads(project("v", source), n_heads)
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return project("o", merge_heads(out))

    return torch.utils.checkpoint.checkpoint(attend, x, source, use_reentrant=False)


def layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    try:
        if not torch.isfinite(var).all():
            raise ValueError("non-finite variance")
    except ValueError:
        log.warning("layer_norm saw a non-finite variance", exc_info=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    attn = multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(x + attn, params["ln1_gamma"], params["ln1_beta"])
    ff = torch.relu(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return layer_norm(h + ff, params["ln2_gamma"], params["ln2_beta"])
