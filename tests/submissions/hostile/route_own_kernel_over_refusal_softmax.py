# attack: registers its own CPU kernel for aten::_softmax on top of the grader's (the latest registration wins) and, inside it, tries every way back to torch's own kernel: the dispatcher's computed kernel for the CPU key called directly, a redispatch below the CPU key, the CPU key excluded for the thread; softmax calls torch.softmax
# target: softmax
# expect: nothing reaches torch's kernel (the grader's registration is the only one below the student's, and no handle removes it): the first attempt meets the refusal, softmax gets status forbidden call and 0 points; the other questions pass
"""Its own kernel over the grader's refusal, trying to reach torch's original kernel."""

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


# --- the attack ------------------------------------------------------------------------------

_DK = torch._C.DispatchKey
_BELOW = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::_softmax", _DK.CPU)


def _original(keyset, x, dim, half):
    attempts = [
        lambda: _BELOW.call_boxed(keyset, x, dim, half),
        lambda: torch.ops.aten._softmax.default.redispatch(
            keyset.remove(_DK.CPU), x, dim, half),
    ]
    for attempt in attempts:
        try:
            return attempt()
        except Exception:
            continue
    torch._C._dispatch_tls_set_dispatch_key_excluded(_DK.CPU, True)
    try:
        return torch.ops.aten._softmax.default(x, dim, half)
    finally:
        torch._C._dispatch_tls_set_dispatch_key_excluded(_DK.CPU, False)


_lib = torch.library.Library("aten", "IMPL")
_lib.impl("_softmax", _original, "CPU", with_keyset=True)


def softmax(x, dim=-1):
    return torch.softmax(x, dim)
