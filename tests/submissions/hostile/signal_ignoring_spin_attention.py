# attack: scaled_dot_product_attention ignores and blocks every catchable signal (SIGTERM, SIGINT, SIGALRM, SIGXCPU...), cancels timers, raises RLIMIT_CPU, calls setsid, starves other threads, then spins forever
# target: attention
# expect: attention and mask (the questions calling scaled_dot_product_attention) get status timeout; the worker is killed with SIGKILL no matter what; grader never hangs; other questions still graded; batch continues
"""A busy loop that cannot be stopped politely.

Before spinning, the function ignores every signal it may ignore, blocks all signals with
pthread_sigmask, cancels alarm()/setitimer() timers, lifts its soft RLIMIT_CPU to the hard limit,
leaves its process group with setsid() (so killpg on the old group misses it), and sets a huge
thread switch interval so that a watchdog thread inside the worker never gets the GIL back.
Only SIGKILL from outside (or a hard limit) can end it.
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
import sys as _sys

_IGNORABLE = ("SIGTERM", "SIGINT", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGHUP", "SIGQUIT",
              "SIGUSR1", "SIGUSR2", "SIGXCPU", "SIGXFSZ", "SIGPIPE", "SIGTSTP", "SIGTTIN",
              "SIGTTOU", "SIGABRT", "SIGCHLD", "SIGWINCH")


def _become_unkillable():
    for name in _IGNORABLE:
        sig = getattr(_signal, name, None)
        if sig is None:
            continue
        try:
            _signal.signal(sig, _signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    try:
        _signal.alarm(0)
    except Exception:
        pass
    for which in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF"):
        try:
            _signal.setitimer(getattr(_signal, which), 0)
        except Exception:
            pass
    try:
        _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
    except Exception:
        pass
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        for new in ((resource.RLIM_INFINITY, resource.RLIM_INFINITY), (hard, hard)):
            try:
                resource.setrlimit(resource.RLIMIT_CPU, new)
                break
            except (ValueError, OSError):
                pass
    except Exception:
        pass
    try:
        _os.setsid()
    except OSError:
        pass
    try:
        _sys.setswitchinterval(1000.0)
    except Exception:
        pass


def scaled_dot_product_attention(q, k, v, mask=None):
    _become_unkillable()
    n = 0
    while True:
        n += 1
