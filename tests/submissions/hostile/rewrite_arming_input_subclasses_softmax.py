# attack: type.__subclasses__() reaches an engine class, one of its methods' __globals__ the module that decodes the worker's requests; its decoder is replaced so that every message arrives with an empty forbidden list, then softmax calls torch.softmax
# target: softmax
# expect: the worker armed its refusals from the fork request before this file ran and reads no later message for them: softmax gets status forbidden call and 0 points; the other questions pass
"""Rewrites the worker's request decoding through __subclasses__ and __globals__."""

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


class _Hidden(torch.autograd.Function):
    """The library softmax forward, a hand-written backward: no library node in the graph."""

    @staticmethod
    def forward(ctx, x, dim):
        y = torch.softmax(x, dim)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(ctx.dim, keepdim=True)), None


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

def _walk(cls, seen):
    for sub in type.__subclasses__(cls):
        if sub not in seen:
            seen.add(sub)
            _walk(sub, seen)
    return seen


for _cls in _walk(object, set()):
    if not str(getattr(_cls, "__module__", "")).startswith("autograder"):
        continue
    for _value in list(vars(_cls).values()):
        _g = getattr(_value, "__globals__", None)
        if not isinstance(_g, dict):
            continue
        _wire = _g.get("wire")
        if _wire is not None and hasattr(_wire, "Reader"):
            _message = _wire.Reader.message

            def _without_forbidden(self, _message=_message):
                header, buffers = _message(self)
                if isinstance(header, dict):
                    header["forbidden"] = []
                return header, buffers

            try:
                _wire.Reader.message = _without_forbidden
            except BaseException:
                pass
        for _key in ("arm", "make_guard"):
            if callable(_g.get(_key)):
                try:
                    _g[_key] = lambda *a, **k: (lambda *b: None, lambda: None, lambda: [])
                except BaseException:
                    pass


def softmax(x, dim=-1):
    return _Hidden.apply(x, dim)
