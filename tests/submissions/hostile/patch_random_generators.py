# attack: patches the random generators (torch.manual_seed/seed/randn/rand/randint/randn_like/rand_like/normal, Tensor.normal_/uniform_, numpy.random.default_rng/Generator/RandomState/seed/rand/randn/normal/uniform/standard_normal/random, random.seed/random/gauss/uniform) so generated inputs would all be zeros, with "degenerate" functions that are only right on all-zero inputs
# target: all
# expect: inputs are generated in the trusted process and are unaffected; only mask's causal_mask cases pass (causal_mask is correct and takes no random input); every other case fails, so softmax, attention, split_heads, multi_head and block score 0
"""Make every test input zero, then answer as if inputs were always zero.

The functions are exactly right when their inputs are all zeros (uniform softmax and attention
weights, zero heads, layer_norm that returns beta...) and wrong otherwise, so the attack shows
up as undeserved points only if the patched generators fed the checks.
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
# The attack
# ---------------------------------------------------------------------------------------------

import random as _random


def _zeros_from_sizes(*size, **kwargs):
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    dtype = kwargs.get("dtype") or torch.get_default_dtype()
    return torch.zeros(*size, dtype=dtype)


def _zeros_like(t, *args, **kwargs):
    return torch.zeros_like(t, dtype=kwargs.get("dtype"))


def _patch_torch():
    T = torch
    T.manual_seed = lambda *a, **k: T.default_generator
    T.seed = lambda *a, **k: 0
    T.randn = _zeros_from_sizes
    T.rand = _zeros_from_sizes
    T.randn_like = _zeros_like
    T.rand_like = _zeros_like
    T.randint = lambda *a, **k: T.zeros(k.get("size", a[-1] if a else ()), dtype=T.long)
    T.randint_like = lambda t, *a, **k: T.zeros_like(t)
    T.normal = lambda *a, **k: T.zeros(k.get("size", a[2] if len(a) > 2 else ()))
    T.Tensor.normal_ = lambda self, *a, **k: self.zero_()
    T.Tensor.uniform_ = lambda self, *a, **k: self.zero_()
    T.Tensor.random_ = lambda self, *a, **k: self.zero_()


class _ZeroRNG:
    """Stands in for numpy Generator/RandomState: every draw is zero."""

    def __init__(self, *args, **kwargs):
        pass

    @staticmethod
    def _zeros(size, integer=False):
        import numpy as np
        if size is None:
            return 0 if integer else 0.0
        return np.zeros(size, dtype=np.int64 if integer else np.float64)

    def standard_normal(self, size=None, *args, **kwargs):
        return self._zeros(size)

    def random(self, size=None, *args, **kwargs):
        return self._zeros(size)

    def random_sample(self, size=None, *args, **kwargs):
        return self._zeros(size)

    def normal(self, loc=0.0, scale=1.0, size=None, *args, **kwargs):
        return self._zeros(size)

    def uniform(self, low=0.0, high=1.0, size=None, *args, **kwargs):
        return self._zeros(size)

    def integers(self, low, high=None, size=None, *args, **kwargs):
        return self._zeros(size, integer=True)

    def randint(self, low, high=None, size=None, *args, **kwargs):
        return self._zeros(size, integer=True)

    def rand(self, *dims):
        return self._zeros(dims or None)

    def randn(self, *dims):
        return self._zeros(dims or None)

    def seed(self, *args, **kwargs):
        return None

    def __getattr__(self, name):
        return lambda *a, **k: self._zeros(k.get("size"))


def _patch_numpy():
    try:
        import numpy as np
    except ImportError:
        return
    zero = _ZeroRNG()
    r = np.random
    r.default_rng = lambda *a, **k: _ZeroRNG()
    r.Generator = _ZeroRNG
    r.RandomState = _ZeroRNG
    for name in ("seed", "rand", "randn", "normal", "uniform", "standard_normal", "random",
                 "random_sample", "randint"):
        setattr(r, name, getattr(zero, name))


def _patch_random():
    _random.seed = lambda *a, **k: None
    _random.random = lambda: 0.0
    _random.gauss = lambda mu=0.0, sigma=1.0: 0.0
    _random.normalvariate = lambda mu=0.0, sigma=1.0: 0.0
    _random.uniform = lambda a, b: a
    _random.randint = lambda a, b: a
    _random.shuffle = lambda x, *a: None


for _patch in (_patch_torch, _patch_numpy, _patch_random):
    try:
        _patch()
    except Exception:
        pass


# Degenerate answers: exact on all-zero inputs, wrong on anything else.


def softmax(x, dim=-1):
    return x * 0.0 + 1.0 / x.shape[dim]


def scaled_dot_product_attention(q, k, v, mask=None):
    return _attention(q * 0.0, k, v, mask)  # ignores the queries: uniform weights


def split_heads(x, n_heads):
    return _split_heads(x, n_heads) * 0.0


def merge_heads(x):
    return _merge_heads(x) * 0.0


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context) * 0.0


def layer_norm(x, gamma, beta, eps=1e-5):
    return x * 0.0 + gamma * 0.0 + beta


def transformer_block(x, params, n_heads, mask=None):
    return x * 0.0 + params["ln2_beta"]
