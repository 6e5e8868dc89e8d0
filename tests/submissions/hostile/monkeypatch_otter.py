# attack: monkeypatches otter in the worker (ExceptionTestFile.run marks every case passed, test_case.__call__/call_func become no-ops, OKTestFile.run, TestFile.passed_all/grade/score forced to full marks), now and on any later import, while every function returns a wrong answer
# target: all
# expect: patches live only in the worker and never reach the trusted otter run; every question scores 0 (cases failed)
"""Rewrite otter's test runner from inside the submission.

The question files are otter exception-based test files (`@test_case` functions). These patches
would make every test case pass if they ran in the process that executes the test files.
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

import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys


class _PatchOnImport(_importlib_abc.MetaPathFinder):
    """Runs a patcher right after a watched module is imported (now or later)."""

    def __init__(self, patchers):
        self.patchers = patchers

    def find_spec(self, name, path=None, target=None):
        patcher = self.patchers.get(name)
        if patcher is None:
            return None
        _sys.meta_path.remove(self)
        try:
            spec = _importlib_util.find_spec(name)
        except Exception:
            spec = None
        finally:
            _sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        original = spec.loader.exec_module

        def exec_module(module, _original=original, _patcher=patcher):
            _original(module)
            try:
                _patcher(module)
            except Exception:
                pass

        spec.loader.exec_module = exec_module
        return spec


def _install_patchers(patchers):
    """Patch the watched modules that are already imported, and the others when they are."""
    for name, patcher in patchers.items():
        module = _sys.modules.get(name)
        if module is not None:
            try:
                patcher(module)
            except Exception:
                pass
    if not any(isinstance(f, _PatchOnImport) for f in _sys.meta_path):
        _sys.meta_path.insert(0, _PatchOnImport(patchers))


def _noop(*args, **kwargs):
    return None


def _all_passed(self, *args, **kwargs):
    module = _sys.modules.get(type(self).__module__)
    result_type = getattr(module, "TestCaseResult", None)
    if result_type is None:
        abstract = _sys.modules.get("otter.test_files.abstract_test")
        result_type = getattr(abstract, "TestCaseResult", None)
    results = []
    for tc in getattr(self, "test_cases", []) or []:
        try:
            results.append(result_type(test_case=tc, message="\u2705 Test case passed", passed=True))
        except Exception:
            pass
    self.test_case_results = results
    for attr, value in (("passed_all", True), ("grade", 1.0)):
        try:
            setattr(self, attr, value)
        except Exception:
            pass


def _patch_exception_test(et):
    et.ExceptionTestFile.run = _all_passed
    tc = et.test_case
    tc.call_func = _noop

    def __call__(self, test_func):
        self.test_func = _noop
        return self

    tc.__call__ = __call__


def _patch_ok_test(ok):
    ok.OKTestFile.run = _all_passed


def _patch_abstract_test(at):
    cls = at.TestFile
    for name, getter in (("passed_all", lambda self: True),
                         ("grade", lambda self: 1.0),
                         ("score", lambda self: getattr(self, "value", None) or 1.0)):
        try:
            setattr(cls, name, property(getter, lambda self, value: None))
        except Exception:
            pass


def _patch_test_files(pkg):
    for sub in ("abstract_test", "exception_test", "ok_test"):
        try:
            __import__("otter.test_files." + sub)
        except Exception:
            pass


_PATCHERS = {
    "otter.test_files": _patch_test_files,
    "otter.test_files.abstract_test": _patch_abstract_test,
    "otter.test_files.exception_test": _patch_exception_test,
    "otter.test_files.ok_test": _patch_ok_test,
}


def _patch_everything():
    try:
        import otter.test_files  # noqa: F401  (may well be absent in the worker)
    except Exception:
        pass
    _install_patchers(_PATCHERS)


def _on_call(name):
    _patch_everything()


_patch_everything()
