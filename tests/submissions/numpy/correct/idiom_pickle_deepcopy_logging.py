# mistake: none
# loses:
# keeps: softmax, attention, mask, split_heads, multi_head, block, concepts
# hint:
"""A correct NumPy solution with debugging leftovers that run while graded: a pickle round trip
and copy.deepcopy of the params, logging with exc_info=True, traceback.print_stack()."""
import copy
import logging
import pickle
import traceback

import numpy as np

DEBUG = True
_SHOWN = []
SNAPSHOTS = []
log = logging.getLogger(__name__)


def _debug_where(x):
    """Leftover debugging: the call stack printed once, and a failed lookup logged with its
    traceback."""
    if DEBUG and not _SHOWN:
        _SHOWN.append(True)
        traceback.print_stack()
        try:
            {}["missing"]
        except KeyError:
            log.warning("lookup failed for %s", x.shape, exc_info=True)


def softmax(x, axis=-1):
    _debug_where(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def causal_mask(T):
    i = np.arange(T)
    return i[None, :] > i[:, None]


def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = np.einsum("...qd,...kd->...qk", q, k) * q.dtype.type(1.0 / np.sqrt(d_k))
    if mask is not None:
        scores = np.where(mask, np.array(-np.inf, dtype=scores.dtype), scores)
    weights = softmax(scores)
    return np.einsum("...qk,...kd->...qd", weights, v), weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    x = x.reshape(x.shape[:-1] + (n_heads, d_head))
    return np.moveaxis(x, -2, -3)


def merge_heads(x):
    x = np.moveaxis(x, -3, -2)
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


def _snapshot(params):
    """Copies of the weights for a later look; the computation uses params."""
    copies = [pickle.loads(pickle.dumps(params)), copy.deepcopy(params)]
    assert all(np.array_equal(c["w_q"], params["w_q"]) for c in copies)
    SNAPSHOTS[:] = copies


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    _snapshot(params)
    kv = context if context is not None else x
    heads, _ = scaled_dot_product_attention(split_heads(x @ params["w_q"], n_heads),
                                            split_heads(kv @ params["w_k"], n_heads),
                                            split_heads(kv @ params["w_v"], n_heads), mask)
    return merge_heads(heads) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + eps) + beta


def transformer_block(x, params, n_heads, mask=None):
    p = params
    h = layer_norm(x + multi_head_attention(x, p, n_heads, mask=mask), p["ln1_gamma"],
                   p["ln1_beta"])
    hidden = h @ p["w1"] + p["b1"]
    hidden = np.where(hidden > 0, hidden, 0)
    return layer_norm(h + hidden @ p["w2"] + p["b2"], p["ln2_gamma"], p["ln2_beta"])


head_weights_shape_6_tokens = [6, 6]
table_growth_when_tokens_double = 2 * 2
head_size_512_dims_8_heads = 512 // 8
weights_per_head_196_patches = np.int64(196) ** 2
weights_row_sum = 1.0
shuffling_changes_more_than_order = np.bool_(False)
