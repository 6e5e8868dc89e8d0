"""Decoding with a cache, an optimiser step, a loss and a backward pass: functions whose
outputs are tuples, dicts, namedtuples, dataclasses, numbers and None.

Check your work with:  autograder check decoding.py
"""
import dataclasses
import math
from collections import namedtuple

import numpy as np
import torch

# What `moments` returns.
Moments = namedtuple("Moments", ["mean", "var"])


# What `adam_step` returns as the new state.
@dataclasses.dataclass
class AdamState:
    m: dict
    v: dict
    t: int


def kv_step(x, cache, w, return_weights=False):
    """One decoding step with a key/value cache.

    x (..., 1, d) is the new token; cache {"k": (..., T, d), "v": (..., T, d)} holds the past
    keys and values; w {"q", "k", "v"} holds (d, d) weights applied as `x @ w[...]`. Append the
    new key and value to the cache, attend from the new query over all T + 1 positions (scores
    divided by sqrt(d)) and return `(output, new_cache, weights)`: output (..., 1, d), the new
    cache as a new dict {"k": (..., T + 1, d), "v": (..., T + 1, d)} (leave `cache` as it
    is), and the attention weights (..., 1, T + 1) when `return_weights`, else None. Everything
    stays differentiable.
    """
    raise NotImplementedError("kv_step")


def moments(x):
    """The mean and the (biased) variance of x over its last dimension, as
    `Moments(mean, var)`."""
    raise NotImplementedError("moments")


def adam_step(params, grads, state, lr=0.01):
    """One Adam step (b1 = 0.9, b2 = 0.999, eps = 1e-8, bias-corrected).

    params and grads are dicts of tensors with the same keys; state is {"m": dict, "v": dict,
    "t": int} (t steps taken so far). Return `(new_params, AdamState(m, v, t))` with new dicts;
    leave params, grads and state as they are.
    """
    raise NotImplementedError("adam_step")


def cross_entropy(logits, target):
    """Mean cross-entropy of logits (N, C) against integer targets (N,), and its gradient:
    return `(loss, dlogits)`, loss a Python float, dlogits (N, C) of the logits' dtype."""
    raise NotImplementedError("cross_entropy")


def norm_forward(x, eps=1e-5):
    """Normalise x over its last dimension (mean 0, biased variance 1, eps added to the
    variance). Return `(y, cache)`: cache is whatever your `norm_backward` needs."""
    raise NotImplementedError("norm_forward")


def norm_backward(dy, cache):
    """The gradient of the loss with respect to x, given dy (its gradient with respect to y)
    and the cache your `norm_forward` returned."""
    raise NotImplementedError("norm_backward")


def np_cross_entropy(logits, target):
    """The NumPy version of `cross_entropy`: logits a NumPy array (N, C), target (N,) ints.
    Return `(loss, dlogits)`: loss a NumPy scalar of the logits' dtype (what `.mean()` gives),
    dlogits a NumPy array."""
    raise NotImplementedError("np_cross_entropy")
