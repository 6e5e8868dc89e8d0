"""Attention from scratch, in PyTorch.

Fill in each function below. Rules that hold for every function:

* Keep the input dtype: float32 in gives float32 out, float64 in gives float64 out.
* Accept extra leading batch dimensions (e.g. (batch, heads, T, d)).
* Stay differentiable: use torch operations only, no NumPy round trips, no .detach().
* Do not modify your inputs in place.

Check your work, from the folder of this file:  python -m autograder check attention.py
"""
import math

import torch


def softmax(x, dim=-1):
    """Numerically stable softmax of `x` along `dim`.

    Subtract the maximum along `dim` before exponentiating so large inputs do not overflow.
    Any shape; the result has the shape and dtype of `x`, and sums to 1 along `dim`.
    Do not call torch.softmax, torch.nn.functional.softmax or Tensor.softmax here.
    """
    raise NotImplementedError("softmax")


def causal_mask(T):
    """The causal mask for a sequence of length `T`.

    Returns a (T, T) bool tensor that is True above the diagonal: position i may not look at
    positions j > i (the future). True means "blocked".
    """
    raise NotImplementedError("causal_mask")


def scaled_dot_product_attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d_k)) v.

    q: (..., Tq, d_k), k: (..., Tk, d_k), v: (..., Tk, d_v).
    mask: optional bool tensor broadcastable to (..., Tq, Tk); True marks a blocked position,
    whose weight must be exactly 0.
    Returns the tuple (output, weights): output (..., Tq, d_v), weights (..., Tq, Tk), each row
    of weights summing to 1. Use your own softmax; do not call
    torch.nn.functional.scaled_dot_product_attention.
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
    """Layer normalisation over the last dimension, like torch.nn.LayerNorm.

    (x - mean) / sqrt(var + eps) * gamma + beta, with the biased variance (divide by n).
    Do not call torch.nn.functional.layer_norm or torch.nn.LayerNorm.
    """
    raise NotImplementedError("layer_norm")


def transformer_block(x, params, n_heads, mask=None):
    """A post-norm transformer block, as in "Attention is all you need".

    h   = layer_norm(x + multi_head_attention(x, params, n_heads, mask), ln1_gamma, ln1_beta)
    out = layer_norm(h + ffn(h), ln2_gamma, ln2_beta)
    ffn(h) = relu(h @ w1 + b1) @ w2 + b2

    params holds w_q, w_k, w_v, w_o, ln1_gamma, ln1_beta, w1, b1, w2, b2, ln2_gamma, ln2_beta.
    Returns a tensor shaped like x.
    """
    raise NotImplementedError("transformer_block")


# Written questions (graded by hand): answer each in your own words, a few sentences,
# in the string under its prompt. `autograder check` lists the ones still empty; a
# grader scores them after you submit.

# why_scale (3 points): Scaled dot-product attention divides the scores Q K^T by sqrt(d_k)
# before the softmax. Explain why: what happens to the scores as d_k grows, what that does to
# the softmax, and why that is bad for learning.
why_scale = """
"""

# why_causal_mask (3 points): A model that predicts the next token (or the next action) is
# trained with a causal mask. Explain what the mask does to the attention weights, and why
# training without it would go wrong.
why_causal_mask = """
"""

# why_positions (2 points): Why does a transformer need position information added to its
# inputs? Use what happens to self-attention's output when the input tokens are shuffled.
why_positions = """
"""

# why_quadratic (2 points): Attention's cost grows quadratically with the sequence length T.
# Explain where the square comes from, and what doubling T does to one head's table of attention
# weights.
why_quadratic = """
"""
