# attack: os.fork() at import, before any question runs, leaves a helper process with torch's own kernels; softmax pipes its input to the helper inside a custom autograd.Function (forward and backward) and returns the helper's torch.softmax
# target: softmax
# expect: the fork is refused at import (the audit hook; below Python the seccomp filter): hard evidence, every question gets status integrity and 0 points
"""A helper process forked at import computes softmax with the library for the worker."""

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

import json as _json
import os

import numpy as _np

_from_worker, _to_helper = os.pipe()
_from_helper, _to_worker = os.pipe()


def _send(fd, header, arrays):
    blobs = [a.tobytes() for a in arrays]
    head = _json.dumps({**header, "shapes": [list(a.shape) for a in arrays],
                        "sizes": [len(b) for b in blobs]}).encode()
    os.write(fd, len(head).to_bytes(8, "little") + head + b"".join(blobs))


def _read(fd, size):
    data = b""
    while len(data) < size:
        data += os.read(fd, size - len(data))
    return data


def _receive(fd):
    header = _json.loads(_read(fd, int.from_bytes(_read(fd, 8), "little")))
    arrays = [_np.frombuffer(_read(fd, n), dtype=_np.float64).reshape(shape)
              for n, shape in zip(header["sizes"], header["shapes"])]
    return header, arrays


if os.fork() == 0:
    try:
        while True:
            header, arrays = _receive(_from_worker)
            a = torch.from_numpy(arrays[0].copy())
            if header["kind"] == "forward":
                out = torch.softmax(a, header["dim"])
            else:
                y = torch.from_numpy(arrays[1].copy())
                out = torch._softmax_backward_data(a, y, header["dim"], y.dtype)
            _send(_to_worker, {}, [out.numpy()])
    finally:
        os._exit(0)


def _ask(kind, a, b, dim):
    arrays = [t.detach().double().numpy() for t in (a, b) if t is not None]
    _send(_to_helper, {"kind": kind, "dim": dim}, arrays)
    _, (out,) = _receive(_from_helper)
    return torch.from_numpy(out.copy()).to(a.dtype)


class _Remote(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim):
        y = _ask("forward", x, None, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return _ask("backward", g, y, ctx.dim), None


def softmax(x, dim=-1):
    return _Remote.apply(x, dim)
