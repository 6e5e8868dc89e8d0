# attack: on every call writes forged replies onto the worker's channel: wire-framed {"ok": true, "outcome": {...}} messages claiming success (built with the worker's own autograder wire module when present, plus hand-rolled 4-byte-length JSON, newline JSON and multiprocessing-style pickle frames) to every socket/pipe fd and every socket/Connection object found via gc, sends extra replies to desynchronise request/response pairing, and reads stdin/sockets to steal pending requests; every function returns a wrong answer
# target: all
# expect: forged or extra frames are rejected or attributed as a protocol error (at worst the case errors); the trusted side never takes a verdict from the worker, only plain arrays it then judges itself; every question scores 0; grader does not hang or crash; batch continues
"""Speak the worker protocol directly and lie in it.

The worker talks to the trusted side over one socket with frames of a 4-byte big-endian header
length, a JSON header, then length-prefixed buffers. This file writes extra, forged frames on
every socket-like descriptor, in several encodings, including verdict-like fields the protocol
does not have, and duplicated replies that would shift later answers onto the wrong requests.
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
# Deliberately WRONG answers (right shapes, still differentiable). If the cheat below worked,
# these would earn undeserved points, which makes the cheat visible.
# ---------------------------------------------------------------------------------------------


def _wrong_softmax(x, dim=-1):
    return _softmax(x, dim) * 0.0


def _wrong_causal_mask(T):
    return ~_causal_mask(T)


def _wrong_attention(q, k, v, mask=None):
    out, weights = _attention(q, k, v, mask)
    return out * 0.0, weights * 0.0


def _wrong_split_heads(x, n_heads):
    return _split_heads(x, n_heads) * 0.0


def _wrong_merge_heads(x):
    return _merge_heads(x) * 0.0


def _wrong_multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _multi_head_attention(x, params, n_heads, mask, context) * 0.0


def _wrong_layer_norm(x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps) * 0.0


def _wrong_transformer_block(x, params, n_heads, mask=None):
    return _transformer_block(x, params, n_heads, mask) * 0.0


# Every public function runs the attack hook `_on_call` (defined in the attack section) and
# then returns a WRONG answer.


def softmax(x, dim=-1):
    _on_call("softmax")
    return _wrong_softmax(x, dim)


def causal_mask(T):
    _on_call("causal_mask")
    return _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    _on_call("scaled_dot_product_attention")
    return _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    _on_call("split_heads")
    return _wrong_split_heads(x, n_heads)


def merge_heads(x):
    _on_call("merge_heads")
    return _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    _on_call("multi_head_attention")
    return _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    _on_call("layer_norm")
    return _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    _on_call("transformer_block")
    return _wrong_transformer_block(x, params, n_heads, mask)


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import gc as _gc
import json as _json
import os as _os
import pickle as _pickle
import socket as _socket
import stat as _stat
import struct as _struct
import sys as _sys

_VERDICT = {"passed": True, "score": 36, "max_score": 36, "points": 6, "status": "passed",
            "grade": 1.0, "correct": True}


def _wire_module():
    for name, module in list(_sys.modules.items()):
        if module is not None and name.endswith(".wire") and hasattr(module, "pack"):
            return module
    return None


def _forged_frames():
    outcome = {"status": "ok", "output": {"t": "none"}, "grads": None, "grad_error": None,
               "mutated": [], "forbidden": [], "called": [], "error": None, **_VERDICT}
    headers = [{"ok": True, "outcome": outcome, **_VERDICT},
               {"ok": True, "defined": {}, **_VERDICT}]
    frames = []
    wire = _wire_module()
    for header in headers:
        if wire is not None:
            try:
                frames.append(wire.pack(header, []))
            except Exception:
                pass
        raw = _json.dumps({**header, "nbuf": 0}).encode()
        frames.append(_struct.pack("!I", len(raw)) + raw)
    pickled = _pickle.dumps(_VERDICT, protocol=2)
    frames.append(_struct.pack("!i", len(pickled)) + pickled)
    frames.append(_json.dumps(_VERDICT).encode() + b"\n")
    return frames


def _write_all(fd, data):
    try:
        blocking = _os.get_blocking(fd)
        _os.set_blocking(fd, False)
    except OSError:
        return
    try:
        _os.write(fd, data)
    except OSError:
        pass
    finally:
        try:
            _os.set_blocking(fd, blocking)
        except OSError:
            pass


def _steal(fd):
    try:
        blocking = _os.get_blocking(fd)
        _os.set_blocking(fd, False)
    except OSError:
        return b""
    try:
        return _os.read(fd, 1 << 16)
    except OSError:
        return b""
    finally:
        try:
            _os.set_blocking(fd, blocking)
        except OSError:
            pass


def _descriptors():
    try:
        names = _os.listdir("/proc/self/fd")
    except OSError:
        names = [str(i) for i in range(64)]
    fds = []
    for name in names:
        try:
            fd = int(name)
            mode = _os.fstat(fd).st_mode
        except (ValueError, OSError):
            continue
        if _stat.S_ISSOCK(mode) or _stat.S_ISFIFO(mode) or fd in (0, 1, 2):
            fds.append(fd)
    return fds


def _forge(name):
    frames = _forged_frames()
    stolen = []
    for fd in _descriptors():
        for frame in frames:
            _write_all(fd, frame)
        data = _steal(fd)
        if data:
            stolen.append((fd, data[:200]))
    for obj in _gc.get_objects():
        try:
            if isinstance(obj, _socket.socket) and obj.fileno() >= 0:
                for frame in frames:
                    obj.sendall(frame)
            elif type(obj).__name__ in ("Connection", "PipeConnection") and hasattr(obj, "send"):
                obj.send(_VERDICT)
            elif type(obj).__name__ == "Channel" and hasattr(obj, "send"):
                obj.send({"ok": True, "outcome": {"status": "ok", **_VERDICT}})
        except Exception:
            pass
    try:
        _os.write(2, ("stole from the channel: %r\n" % (stolen,)).encode())
    except OSError:
        pass


def _on_call(name):
    _forge(name)
