# mistake: kv_step's cache has no values
# loses: cache
# keeps: moments, adam, loss, backward
# says: the cache returned by kv_step has no key "v"
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
    keys = torch.cat((cache["k"], x @ w["k"]), dim=-2)
    values = torch.cat((cache["v"], x @ w["v"]), dim=-2)
    scores = (x @ w["q"]) @ keys.transpose(-1, -2) / math.sqrt(x.shape[-1])
    e = (scores - scores.amax(dim=-1, keepdim=True)).exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    new_cache = {"k": keys}
    return weights @ values, new_cache, (weights if return_weights else None)


def moments(x):
    mean = x.sum(dim=-1) / x.shape[-1]
    var = ((x - mean[..., None]) ** 2).sum(dim=-1) / x.shape[-1]
    return Moments(mean=mean, var=var)


def adam_step(params, grads, state, lr=0.01):
    t = state["t"] + 1
    new_params, m, v = {}, {}, {}
    for name, p in params.items():
        g = grads[name]
        m[name] = 0.9 * state["m"][name] + 0.1 * g
        v[name] = 0.999 * state["v"][name] + 0.001 * g * g
        m_hat = m[name] / (1 - 0.9 ** t)
        v_hat = v[name] / (1 - 0.999 ** t)
        new_params[name] = p - lr * m_hat / (torch.sqrt(v_hat) + 1e-8)
    return new_params, AdamState(m=m, v=v, t=t)


def cross_entropy(logits, target):
    n = logits.shape[0]
    p = torch.softmax(logits, dim=-1)
    onehot = torch.nn.functional.one_hot(target, logits.shape[-1]).to(logits.dtype)
    # The loss in Python's own floats, one sample at a time.
    loss = -sum(math.log(float(p[i, int(target[i])])) for i in range(n)) / n
    return loss, (p - onehot) / n


def norm_forward(x, eps=1e-5):
    centred = x - x.mean(dim=-1, keepdim=True)
    std = torch.sqrt((centred ** 2).mean(dim=-1, keepdim=True) + eps)
    return centred / std, (centred, std)


def norm_backward(dy, cache):
    centred, std = cache
    y = centred / std
    return (dy - dy.mean(dim=-1, keepdim=True) - y * (dy * y).mean(dim=-1, keepdim=True)) / std


def np_cross_entropy(logits, target):
    n = logits.shape[0]
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(n), target]).mean()
    d = p.copy()
    d[np.arange(n), target] -= 1
    return loss, d / n
