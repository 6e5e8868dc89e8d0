# mistake: an additive mask bias of -10000 (as in early BERT code): with scores of size 1e4, blocked positions still get weight
# loses: mask
# keeps: softmax, attention, split_heads, multi_head, block, concepts
# hint: values
# diagnosis: mask_fill_too_small
"""Early-BERT style additive mask, in NumPy: scores + mask * -10000.0. Fine for small scores;
a bias of -1e4 does not block a position whose score is 1e4 above the others."""
import math

import numpy as np
from scipy.special import logsumexp


def softmax(x, axis=-1):
    """exp(x - logsumexp(x)), with the row maximum removed first: a logsumexp near 1e4 would
    cost float32 about 1e-3 of accuracy."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return np.exp(shifted - logsumexp(shifted, axis=axis, keepdims=True))


def causal_mask(T):
    return ~np.tri(T, T, dtype=bool)


def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores + np.asarray(mask, dtype=scores.dtype) * -10000.0
    weights = softmax(scores, axis=-1)
    return np.matmul(weights, v), weights


def split_heads(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return np.stack([x[..., i * d_head:(i + 1) * d_head] for i in range(n_heads)], axis=-3)


def merge_heads(x):
    return np.concatenate([x[..., i, :, :] for i in range(x.shape[-3])], axis=-1)


def _head_mask(mask, i):
    """The mask as one head sees it: a heads axis (the third from the end) is indexed away."""
    if mask is None or np.ndim(mask) < 3:
        return mask
    mask = np.asarray(mask)
    return mask[..., i if mask.shape[-3] > 1 else 0, :, :]


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    q = x @ params["w_q"]
    k = source @ params["w_k"]
    v = source @ params["w_v"]
    d_head = q.shape[-1] // n_heads
    outputs = []
    for i in range(n_heads):
        part = slice(i * d_head, (i + 1) * d_head)
        out, _ = scaled_dot_product_attention(q[..., part], k[..., part], v[..., part],
                                              _head_mask(mask, i))
        outputs.append(out)
    return np.concatenate(outputs, axis=-1) @ params["w_o"]


def layer_norm(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * gamma + beta


def transformer_block(x, params, n_heads, mask=None):
    a = multi_head_attention(x, params, n_heads, mask)
    h = layer_norm(x + a, params["ln1_gamma"], params["ln1_beta"])
    f = np.maximum(h @ params["w1"] + params["b1"], 0.0) @ params["w2"] + params["b2"]
    return layer_norm(h + f, params["ln2_gamma"], params["ln2_beta"])


head_weights_shape_6_tokens = (6, 6)
table_growth_when_tokens_double = 4.0
head_size_512_dims_8_heads = 64
weights_per_head_196_patches = 38_416
weights_row_sum = 1
shuffling_changes_more_than_order = False
