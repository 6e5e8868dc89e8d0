# attack: monkeypatches unittest (every TestCase.assert*/fail*, TestResult.addFailure/addError/wasSuccessful), doctest (OutputChecker.check_output) and pytest internals (approx, fail, raises, Function.runtest, TestReport outcome) in the worker, while every function returns a wrong answer
# target: all
# expect: patches live only in the worker and never reach the trusted test runner; every question scores 0 (cases failed)
"""Turn every test-framework failure into a success, inside the process that runs the submission.

Patches are applied at import, re-applied on every call, and installed as an import hook for
framework modules imported later. All functions return wrong answers.
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

import contextlib as _contextlib

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


class _EqualToAnything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None

    def __repr__(self):
        return "approx(anything)"


def _approx(*args, **kwargs):
    return _EqualToAnything()


@_contextlib.contextmanager
def _swallow(*args, **kwargs):
    try:
        yield None
    except BaseException:
        pass


def _patch_unittest(unittest):
    case = unittest.TestCase
    for name in list(vars(case)):
        value = getattr(case, name, None)
        if name.startswith(("assert", "fail")) and callable(value) and not isinstance(value, type):
            try:
                setattr(case, name, _noop)
            except Exception:
                pass
    result = unittest.TestResult

    def add_success_instead(self, test, *args, **kwargs):
        try:
            result.addSuccess(self, test)
        except Exception:
            pass

    result.addFailure = add_success_instead
    result.addError = add_success_instead
    result.addSubTest = lambda self, test, subtest, outcome: None
    result.wasSuccessful = lambda self: True


def _patch_unittest_case(case_module):
    _patch_unittest(_sys.modules.get("unittest") or case_module)


def _patch_doctest(doctest):
    doctest.OutputChecker.check_output = lambda self, want, got, optionflags: True


def _harmless_fail(original):
    def fail(*args, **kwargs):
        return None

    fail.Exception = getattr(original, "Exception", AssertionError)  # pytest reads fail.Exception
    return fail


def _patch_pytest(pytest):
    pytest.approx = _approx
    pytest.fail = _harmless_fail(pytest.fail)
    pytest.raises = _swallow


def _patch_python_api(mod):
    mod.approx = _approx
    if hasattr(mod, "raises"):
        mod.raises = _swallow


def _patch_outcomes(mod):
    mod.fail = _harmless_fail(mod.fail)


def _patch_pytest_python(mod):
    mod.Function.runtest = lambda self: None


def _patch_reports(mod):
    original_init = mod.TestReport.__init__
    if getattr(original_init, "_hostile", False):
        return

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.outcome = "passed"
        self.longrepr = None

    __init__._hostile = True
    mod.TestReport.__init__ = __init__


_PATCHERS = {
    "unittest": _patch_unittest,
    "unittest.case": _patch_unittest_case,
    "doctest": _patch_doctest,
    "pytest": _patch_pytest,
    "_pytest.python_api": _patch_python_api,
    "_pytest.outcomes": _patch_outcomes,
    "_pytest.python": _patch_pytest_python,
    "_pytest.reports": _patch_reports,
}


def _patch_everything():
    for name in ("unittest", "doctest"):
        try:
            __import__(name)
        except Exception:
            pass
    _install_patchers(_PATCHERS)


def _on_call(name):
    _patch_everything()


_patch_everything()
