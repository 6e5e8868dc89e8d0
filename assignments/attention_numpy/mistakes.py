"""Known mistakes of the NumPy attention assignment, named in feedback when a case shows one.

The same catalogue API as the torch track's `mistakes.py`: variants are the reference's function
as the mistake computes it (`impl(ref, *args, **kwargs)`, on NumPy arrays), fallback rules are
tried only when no variant explains a case. Instructor-only, like the reference.
"""
import numpy as np

from autograder.diagnose import (Catalogue, axis_detail, factor_detail, fixed_rank,
                                 fixed_rank_detail, none_unhandled, normalised_along_other_axis,
                                 off_by_constant_factor)

catalogue = Catalogue()
mistake = catalogue.variant


def _layer_norm(x, gamma, beta, eps, ddof=0, outside=False):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True, ddof=ddof)
    std = np.sqrt(var) + x.dtype.type(eps) if outside else np.sqrt(var + x.dtype.type(eps))
    return (x - mean) / std * gamma + beta


@mistake("unbiased_variance", "layer_norm",
         name="layer norm with the unbiased variance",
         hint="Layer norm divides by n, not n - 1: use `x.var(axis=-1, keepdims=True)` (ddof=0, "
              "the default), not `ddof=1`.")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps, ddof=1)


@mistake("eps_outside_sqrt", "layer_norm",
         name="eps added outside the square root",
         hint="Divide by `np.sqrt(var + eps)`, not `np.sqrt(var) + eps` (or `x.std() + eps`).")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps, outside=True)


@catalogue.combination(("unbiased_variance", "eps_outside_sqrt"), "layer_norm")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, eps, ddof=1, outside=True)


# ------------------------------------------------------------------ when nothing else fits

catalogue.fallback_rule(
    "fixed_rank", when=fixed_rank, detail=fixed_rank_detail,
    name="code written for one number of dimensions",
    hint="Every function must accept any number of leading dimensions, (T, d) as well as "
         "(B, T, d) or (B, H, T, d). Count axes from the end: `x.shape[-1]`, "
         "`np.swapaxes(k, -2, -1)`, `*lead, T, d = x.shape` (or `x.shape[:-1]`) instead of "
         "`B, T, d = x.shape`, and `x.reshape(*x.shape[:-1], n_heads, d_head)` instead of "
         "`reshape(B, T, H, D)`; `transpose` with a fixed order of axes such as (0, 2, 1) "
         "only fits one rank.")

catalogue.fallback_rule(
    "mask_none_unhandled",
    functions=["scaled_dot_product_attention", "multi_head_attention", "transformer_block"],
    when=none_unhandled("mask", 3),
    name="`mask=None` is not handled",
    hint="Every case without a mask fails while the masked ones run: with `mask=None`, skip "
         "the masking step (`if mask is not None: scores = np.where(mask, -np.inf, scores)`).")

catalogue.fallback_rule(
    "off_by_constant_factor", when=off_by_constant_factor, detail=factor_detail,
    name="values off by a large constant factor",
    hint="A factor this size usually comes from a small constant used the wrong way: check "
         "every place a constant such as eps enters the formula, e.g. `std + eps`, not "
         "`std * eps`, and multiplications that should be divisions.")

catalogue.fallback_rule(
    "softmax_fixed_axis", functions=["softmax"],
    when=normalised_along_other_axis("axis", 1), detail=axis_detail("axis", 1),
    name="softmax normalises along a fixed axis",
    hint="Use the `axis` argument everywhere an axis appears: "
         "`x.max(axis=axis, keepdims=True)` and `e.sum(axis=axis, keepdims=True)`.")
