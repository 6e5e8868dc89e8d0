# attack: at import starts detached processes that escape the process group: Popen(start_new_session=True) of `sleep 1000` and of a signal-ignoring python loop, a `nohup setsid sleep 1000 &` shell, and a classic double-fork setsid daemon
# target: import
# expect: full marks (all functions are correct); after grading no process started by the submission survives (no `sleep 1000`, no HOSTILE_SUBMISSION_DETACHED_MARKER python loop, no hostile_daemon); grader does not hang; batch continues
"""Detached background processes started while the module is imported.

Every one of them leaves the worker's process group (new session), so killing the worker or its
group does not reach them; only a PID namespace, a cgroup, or a subreaper that kills orphans
does. The python loop carries HOSTILE_SUBMISSION_DETACHED_MARKER in its command line and the
double-fork daemon renames itself hostile_daemon, so a test can look for survivors.
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
import subprocess as _subprocess
import sys as _sys
import time as _time

_MARKER = "HOSTILE_SUBMISSION_DETACHED_MARKER"

_LOOP = (
    "import signal, time  # " + _MARKER + "\n"
    "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):\n"
    "    signal.signal(s, signal.SIG_IGN)\n"
    "while True:\n"
    "    time.sleep(1)\n"
)


def _set_process_name(name):
    try:
        import ctypes
        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except Exception:
        pass


def _popen(*args, **kwargs):
    try:
        return _subprocess.Popen(*args, **kwargs)
    except Exception:
        return None


def _double_fork_daemon():
    try:
        pid = _os.fork()
    except OSError:
        return
    if pid > 0:
        try:
            _os.waitpid(pid, 0)
        except OSError:
            pass
        return
    try:
        _os.setsid()
        if _os.fork() > 0:
            _os._exit(0)
        try:
            _os.chdir("/")
        except OSError:
            pass
        import signal
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError, RuntimeError):
                pass
        _set_process_name("hostile_daemon")
        while True:
            _time.sleep(1.0)
    except BaseException:
        pass
    finally:
        _os._exit(0)


_popen(["sleep", "1000"], start_new_session=True, close_fds=False, stdin=_subprocess.DEVNULL)
_popen([_sys.executable, "-c", _LOOP, _MARKER], start_new_session=True, close_fds=False,
       stdin=_subprocess.DEVNULL)
_popen("nohup setsid sleep 1000 >/dev/null 2>&1 &", shell=True, start_new_session=True,
       stdin=_subprocess.DEVNULL)
_double_fork_daemon()
