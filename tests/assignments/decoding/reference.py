"""Hidden reference of the `decoding` test assignment: outputs of every structure."""
import dataclasses
import math
from collections import namedtuple

import numpy as np
import torch

Moments = namedtuple("Moments", ["mean", "var"])


@dataclasses.dataclass
class AdamState:
    m: dict
    v: dict
    t: int


def kv_step(x, cache, w, return_weights=False):
    q = x @ w["q"]
    k = torch.cat([cache["k"], x @ w["k"]], dim=-2)
    v = torch.cat([cache["v"], x @ w["v"]], dim=-2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, {"k": k, "v": v}, weights if return_weights else None


def moments(x):
    mean = x.mean(dim=-1)
    return Moments(mean, ((x - mean.unsqueeze(-1)) ** 2).mean(dim=-1))


def adam_step(params, grads, state, lr=0.01):
    b1, b2, eps = 0.9, 0.999, 1e-8
    t = state["t"] + 1
    m = {k: b1 * state["m"][k] + (1 - b1) * grads[k] for k in params}
    v = {k: b2 * state["v"][k] + (1 - b2) * grads[k] ** 2 for k in params}
    new = {k: params[k] - lr * (m[k] / (1 - b1 ** t)) / ((v[k] / (1 - b2 ** t)).sqrt() + eps)
           for k in params}
    return new, AdamState(m, v, t)


def cross_entropy(logits, target):
    n = logits.shape[0]
    logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    loss = -logp[torch.arange(n), target].mean()
    dlogits = logp.exp()
    dlogits[torch.arange(n), target] -= 1
    return loss.item(), dlogits / n


def norm_forward(x, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    inv = 1 / torch.sqrt(((x - mean) ** 2).mean(dim=-1, keepdim=True) + eps)
    y = (x - mean) * inv
    return y, {"y": y, "inv": inv}


def norm_backward(dy, cache):
    y, inv = cache["y"], cache["inv"]
    return inv * (dy - dy.mean(dim=-1, keepdim=True) - y * (dy * y).mean(dim=-1, keepdim=True))


def np_cross_entropy(logits, target):
    n = logits.shape[0]
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    loss = -logp[np.arange(n), target].mean()
    dlogits = np.exp(logp)
    dlogits[np.arange(n), target] -= 1
    return loss, dlogits / n
