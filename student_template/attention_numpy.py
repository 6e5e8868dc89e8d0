"""Attention from scratch, in NumPy.

Fill in each function below, then answer the knowledge checks at the end. Rules that hold for
every function:

* NumPy arrays in, NumPy arrays out.
* Keep the input dtype: float32 in gives float32 out, float64 in gives float64 out. (In NumPy 2,
  a NumPy float64 scalar such as `np.sqrt(d)` turns float32 arrays into float64; a Python float
  such as `math.sqrt(d)` does not.)
* Accept extra leading batch dimensions (e.g. (batch, heads, T, d)).
* Do not modify your inputs in place.

Check your work, from the folder of this file:  python -m autograder check attention_numpy.py
"""
import math

import numpy as np


def softmax(x, axis=-1):
    """Numerically stable softmax of `x` along `axis`.

    Subtract the maximum along `axis` before exponentiating so large inputs do not overflow.
    Any shape; the result has the shape and dtype of `x`, and sums to 1 along `axis`.
    Do not call scipy.special.softmax (or log_softmax) here.
    """
    raise NotImplementedError("softmax")


def causal_mask(T):
    """The causal mask for a sequence of length `T`.

    Returns a (T, T) bool array that is True above the diagonal: position i may not look at
    positions j > i (the future). True means "blocked".
    """
    raise NotImplementedError("causal_mask")


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v).
    mask: optional bool array broadcastable to (..., Tq, Tk); True marks a blocked position,
    whose weight must be exactly 0.
    Returns the tuple (output, weights): output (..., Tq, d_v), weights (..., Tq, Tk), each row
    of weights summing to 1. Use your own softmax.
    """
    raise NotImplementedError("scaled_dot_product_attention")


def split_heads(x, n_heads):
    """(..., T, d_model) -> (..., n_heads, T, d_head), with d_head = d_model // n_heads.

    Head i holds features i*d_head : (i+1)*d_head of every position.
    """
    raise NotImplementedError("split_heads")


def merge_heads(x):
    """(..., n_heads, T, d_head) -> (..., T, n_heads * d_head): the exact inverse of split_heads."""
    raise NotImplementedError("merge_heads")


def multi_head_attention(x, params, n_heads, mask=None, context=None):
    """Multi-head attention.

    x: (..., T, d_model). params: dict with "w_q", "w_k", "w_v", "w_o", each (d_model, d_model),
    applied as x @ w. Queries come from x; keys and values come from `context` (..., S, d_model)
    when it is given (cross-attention), else from x (self-attention).
    Project, split into heads, attend per head (with `mask` if given), merge the heads, then
    apply w_o. Returns (..., T, d_model).
    """
    raise NotImplementedError("multi_head_attention")


def layer_norm(x, gamma, beta, eps=1e-5):
    """Layer normalisation over the last axis, like torch.nn.LayerNorm.

    (x - mean) / sqrt(var + eps) * gamma + beta, with the biased variance (divide by n, which
    is what np.var does by default).
    """
    raise NotImplementedError("layer_norm")


def transformer_block(x, params, n_heads, mask=None):
    """A post-norm transformer block, as in "Attention is all you need".

    h   = layer_norm(x + multi_head_attention(x, params, n_heads, mask), ln1_gamma, ln1_beta)
    out = layer_norm(h + ffn(h), ln2_gamma, ln2_beta)
    ffn(h) = relu(h @ w1 + b1) @ w2 + b2

    params holds w_q, w_k, w_v, w_o, ln1_gamma, ln1_beta, w1, b1, w2, b2, ln2_gamma, ln2_beta.
    Returns an array shaped like x.
    """
    raise NotImplementedError("transformer_block")


# Knowledge checks (question `concepts`): replace each None with your answer, a value such
# as 7, (2, 3) or True (arithmetic such as 3 * 5 is fine too).
# 1. A sequence has 6 tokens. The shape of one head's attention weight table, as a tuple.
head_weights_shape_6_tokens = None
# 2. The sequence doubles in length. By what factor does that table's number of entries grow?
table_growth_when_tokens_double = None
# 3. A model has 512-dimensional vectors and 8 heads. How many features does each head get?
head_size_512_dims_8_heads = None
# 4. An image is cut into 196 patches, one token each. How many attention weights per head?
weights_per_head_196_patches = None
# 5. What does each row of attention weights sum to?
weights_row_sum = None
# 6. Does shuffling the tokens change anything in self-attention's output besides the order
#    of its rows? True or False.
shuffling_changes_more_than_order = None


# Written questions (graded by hand): answer each in your own words, a few sentences,
# in the string under its prompt. `autograder check` lists the ones still empty; a
# grader scores them after you submit.

# why_scale (3 points): In the lesson's experiment with random vectors, the biggest softmax
# weight without scaling was 1.0 for d = 64 and d = 1024, but 0.51 and 0.41 once the scores were
# divided by sqrt(d). Explain what causes this, and why a weight of 1.0 on one key is a problem
# for a model that is being trained.
why_scale = """
"""

# why_causal_mask (3 points): Your causal_mask is True above the diagonal. When a model learns
# to predict the next token (or the robot's next action), why must those positions be blocked
# during training, and what would happen if they were not?
why_causal_mask = """
"""

# why_positions (2 points): The lesson shuffles five tokens and compares self-attention's
# outputs before and after. What does it find, and why does that mean position information has
# to be added to the inputs?
why_positions = """
"""
