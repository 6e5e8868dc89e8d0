# attack: the file's top level never hands the worker back: it finds the worker's own channel, serving code and reply encoder (object.__subclasses__ and __globals__, no audited call), sends the load reply itself and serves every graded call from inside the import, where the refusals do not hold yet; its softmax is torch.softmax
# target: all
# expect: the trusted side grades nothing in a worker whose refusals do not hold (the fork server reads it from outside): every question that forbids a routine is not graded (error, flagged for review as unarmed); split_heads, which forbids nothing, is graded in a worker that refuses nothing; no grader hang
"""Serve the graded calls from inside the import, before the refusals hold."""

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

import os
import socket
import sys


def softmax(x, dim=-1):
    return torch.softmax(x, dim)


def _engine_class(name):
    todo, seen = [object], set()
    while todo:
        cls = todo.pop()
        if id(cls) in seen:
            continue
        seen.add(id(cls))
        try:
            todo += type.__subclasses__(cls)
        except TypeError:
            continue
        init = vars(cls).get("__init__")
        if cls.__name__ == name and "serve" in getattr(init, "__globals__", {}):
            return cls
    return None


def _serve_from_here():
    channel = _engine_class("Channel")
    if channel is None:
        return
    g = channel.__init__.__globals__
    for fd in range(3, 32):
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if sock.type != socket.SOCK_STREAM:
            sock.close()
            continue
        break
    else:
        return
    chan = channel(sock)
    me = sys.modules[__name__]
    api = ["softmax", "causal_mask", "scaled_dot_product_attention", "split_heads",
           "merge_heads", "multi_head_attention", "layer_norm", "transformer_block"]
    chan.send({"ok": True, "defined": g["describe_api"](me, api)})
    wire = g["wire"]
    while True:
        try:
            header, buffers = chan.recv()
        except Exception:  # noqa: BLE001 - the trusted side closed the channel
            os._exit(0)
        args, kwargs = wire.decode(header["inputs"], buffers)
        outcome = g["run_call"](getattr(me, header["fn"]), tuple(args), dict(kwargs),
                                upstream=wire.decode(header["upstream"], buffers),
                                want_grad=bool(header.get("want_grad")), forbidden=[],
                                api=api, guard=False)
        out: list = []
        chan.send({"ok": True, "outcome": g["encode_outcome_safely"](outcome, out,
                                                                     header["fn"])}, out)


_serve_from_here()
