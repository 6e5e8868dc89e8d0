# attack: functions return values meant to blow up serialisation or comparison: a zero-stride expand() view of 10**12 elements (softmax), a correct output with a 10**10-element weights view (attention), a list of 10**8 floats (split_heads), an object whose __array__ never returns and __len__ lies (merge_heads), an infinite generator (multi_head_attention), complex128 values (layer_norm) and all-NaN output (transformer_block)
# target: all
# expect: softmax, attention, split_heads, multi_head and block score 0 (failed, error or timeout: rejected by size/type/shape checks without materialising anything huge); mask keeps its causal_mask cases and loses its masked-attention ones (they call scaled_dot_product_attention, whose weights are the huge view); the grader's memory and time stay bounded; batch continues
"""Return values that are cheap to make and expensive to look at."""

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

import time as _time


class _NeverArray:
    def __array__(self, dtype=None, copy=None):
        while True:
            _time.sleep(0.1)

    def __len__(self):
        return 10**12

    def __getitem__(self, index):
        return self

    def __iter__(self):
        while True:
            yield self

    def __repr__(self):
        return "<" + "never " * 10 + ">"


def _forever():
    n = 0
    while True:
        yield n
        n += 1


def softmax(x, dim=-1):
    return torch.zeros(1, dtype=x.dtype).expand(10**6, 10**6)


def scaled_dot_product_attention(q, k, v, mask=None):
    out, _ = _attention(q, k, v, mask)
    return out, torch.zeros(1, dtype=q.dtype).expand(10**5, 10**5)


def split_heads(x, n_heads):
    return [0.0] * 10**8


def merge_heads(x):
    return _NeverArray()


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _forever()


def layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps).to(torch.complex128)


def transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask) * float("nan")
