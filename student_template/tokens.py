"""Tokens in, tokens out: patches, positions, one decoding step and the next-token loss (PyTorch).

A transformer reads a sequence of token vectors. This assignment builds what surrounds the
attention you already wrote: turning an image into patch tokens, giving tokens their positions,
generating one step at a time with a cache of keys and values, and scoring the predictions.

Rules that hold for every function:

* Keep the input dtype: float32 in gives float32 out, float64 in gives float64 out.
* Accept extra leading batch dimensions where the docstring shows `...`.
* Stay differentiable: use torch operations only, no NumPy round trips, no .detach().
* Do not modify your inputs in place (a dict you are given included).

Check your work, from the folder of this file:  python -m autograder check tokens.py
"""
import math

import torch


def patchify(images, patch_size):
    """Cut images into square patches and flatten each patch into one token vector.

    images: (..., C, H, W), with H and W multiples of P = patch_size.
    Returns (..., N, C * P * P) with N = (H // P) * (W // P): the patches in reading order (the
    top row of patches from left to right, then the next row...), each flattened in the order
    of its values in `images`: channel first, then the row inside the patch, then the column.
    Do not call torch.nn.functional.unfold (or torch.nn.Unfold): cut the patches yourself with
    reshape and permute.
    """
    raise NotImplementedError("patchify")


def sinusoidal_positions(T, d_model, base=10000.0, dtype=torch.float32):
    """The sinusoidal position encodings of "Attention is all you need", a (T, d_model) tensor.

    Row t is position t (0, 1, ..., T - 1). For each pair of features 2i and 2i + 1
    (i = 0, 1, ..., d_model / 2 - 1) the angle is t / base ** (2i / d_model);
    feature 2i holds sin(angle) and feature 2i + 1 holds cos(angle). d_model is even.
    The result has the dtype `dtype`: compute it in that dtype (float64 positions are
    precise to float64's digits).
    """
    raise NotImplementedError("sinusoidal_positions")


def add_positions(tokens, base=10000.0):
    """Tokens (..., T, d_model) with each position's encoding added: token t gets row t of
    sinusoidal_positions(T, d_model, base), in the tokens' dtype. Returns a new tensor.
    """
    raise NotImplementedError("add_positions")


def decode_step(x, params, cache=None):
    """One step of causal self-attention (a single head) while generating, with a cache.

    x: (..., S, d_model), the S newest tokens (S = 1 when generating one token at a time).
    params: dict with "w_q", "w_k", "w_v", "w_o", each (d_model, d_model), applied as x @ w.
    cache: None before the first step, else the dict {"k": keys, "v": values} returned by the
    previous step, each (..., L, d_model): the keys and values of the L tokens before these.

    The new keys and values (x @ w_k, x @ w_v) go after the cached ones. New token s (counting
    from 0 among the S) sits at position L + s and attends to positions 0 .. L + s: the cached
    tokens and the new ones up to itself, never a later one. Its output is
    softmax(q k^T / sqrt(d_model)) v @ w_o over those positions, with q = x @ w_q.

    Returns the tuple (output, cache): output (..., S, d_model), and a new dict
    {"k": (..., L + S, d_model), "v": (..., L + S, d_model)}. Do not change the dict you were
    given: return a new one.
    """
    raise NotImplementedError("decode_step")


def next_token_loss(logits, targets, ignore_index=-100):
    """The mean cross-entropy of next-token predictions, and their accuracy.

    logits: (..., T, V) float scores over a vocabulary of V tokens; targets: (..., T) int64
    token ids. A target equal to `ignore_index` marks padding: that position counts in neither
    the loss nor the accuracy.
    Returns the tuple (loss, accuracy):
    * loss, a 0-d tensor: the mean over the counted positions of
      log(sum(exp(logits))) - logits[target], computed stably (subtract each row's maximum
      before exp, and add it back after the log);
    * accuracy, a Python float: the share of counted positions whose largest logit is the target.
    Do not call torch.nn.functional.cross_entropy, nll_loss or log_softmax, or logsumexp.
    """
    raise NotImplementedError("next_token_loss")


# Written questions (graded by hand): answer each in your own words, a few sentences,
# in the string under its prompt. `autograder check` lists the ones still empty; a
# grader scores them after you submit.

# why_positions_matter (3 points): Self-attention on its own does not know the order of its
# tokens. Explain what happens to its output when the input tokens are shuffled, why that is a
# problem for a sentence or an image, and how adding sinusoidal position encodings to the tokens
# fixes it.
why_positions_matter = """
"""

# why_cache (2 points): When a model generates one token at a time, decode_step keeps the keys
# and values of the earlier tokens in a cache. Explain what work the cache saves at each step,
# and what it costs.
why_cache = """
"""
