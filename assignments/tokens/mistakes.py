"""Known mistakes of the tokens assignment, named in feedback when a case shows one.

Each function is written once with knobs (`catalogue.family`): the reference's computation with
every knob at its default, and each mistake turning some of them, so that mistakes made together
can be named together. A variant of `sinusoidal_positions` also explains `add_positions`, whose
reference calls it. Rules (`catalogue.rule`) name what any function can show: a library routine
the question refuses, an input changed in place, float32 rounding in float64 maths, a cut
gradient. Like the reference, this file is instructor-only.
"""
import math

import torch

from autograder.catalogue import (Catalogue, all_of, any_of, changed_input, computed_in_float32,
                                 fixed_rank, fixed_rank_detail, float32_rounding, forbidden_call,
                                 gradient_cut, lowered_precision, mixed_precision_error, not_)

catalogue = Catalogue()


# ------------------------------------------------------------------ patches

@catalogue.family("patchify")
def patchify_family(ref, images, patch_size, *, permute=True, order="rows",
                    inside="channel_first"):
    """The reference's cut with knobs: whether the axes are moved at all, the order of the
    patches (rows of patches first, or columns), the order of a patch's values."""
    *lead, C, H, W = images.shape
    P, n = patch_size, len(images.shape) - 3
    N = (H // P) * (W // P)
    if not permute:
        return images.reshape(*lead, N, C * P * P)
    x = images.reshape(*lead, C, H // P, P, W // P, P)
    outer = (n + 1, n + 3) if order == "rows" else (n + 3, n + 1)
    inner = (n, n + 2, n + 4) if inside == "channel_first" else (n + 2, n + 4, n)
    return x.permute(*range(n), *outer, *inner).reshape(*lead, N, C * P * P)


patchify_family.mistake(
    "patchify_reshape_only", permute=False,
    name="patches cut with reshape alone",
    hint="The values of one patch are not next to each other in memory, so a single reshape "
         "mixes rows of different patches. Split the height and the width: `reshape(..., C, "
         "H // P, P, W // P, P)`, move the two patch indices in front with `permute`, then "
         "flatten.")
patchify_family.mistake(
    "patchify_channels_last", inside="channel_last",
    name="each patch flattened channel last",
    hint="Flatten a patch channel first, in the order of its values in `images`: all of "
         "channel 0's values (row by row), then channel 1's. Keep C before the two axes inside "
         "the patch when you permute.")
patchify_family.mistake(
    "patchify_column_order", order="cols",
    name="patches listed column by column",
    hint="List the patches in reading order: the top row of patches from left to right, then "
         "the next row. Put the patch-row index before the patch-column index when you "
         "permute.")


# ------------------------------------------------------------------ positions

@catalogue.family("sinusoidal_positions")
def positions_family(ref, T, d_model, base=10000.0, dtype=torch.float32, *, swap=False,
                     layout="interleaved", exponent="pair", fixed_base=None, start=0):
    """The encodings with knobs: sin and cos swapped, laid out in two halves, an exponent per
    feature rather than per pair, a base of its own, positions counted from 1."""
    b = base if fixed_base is None else fixed_base
    t = torch.arange(start, start + T, dtype=torch.float64)[:, None]
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if exponent == "feature":
        angle = t / b ** (torch.arange(d_model, dtype=torch.float64) / d_model)
        out = torch.empty(T, d_model, dtype=torch.float64)
        out[:, 0::2], out[:, 1::2] = first(angle[:, 0::2]), second(angle[:, 1::2])
        return out.to(dtype)
    angle = t / b ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    if layout == "halves":
        return torch.cat([first(angle), second(angle)], dim=-1).to(dtype)
    return torch.stack([first(angle), second(angle)], dim=-1).reshape(T, d_model).to(dtype)


positions_family.mistake(
    "positions_sin_cos_swapped", swap=True,
    name="sin and cos swapped",
    hint="Feature 2i holds sin(angle) and feature 2i + 1 holds cos(angle): row 0, position 0, "
         "is [0, 1, 0, 1, ...].")
positions_family.mistake(
    "positions_halves", layout="halves",
    name="sines in the first half of the features, cosines in the second",
    hint="Interleave them: feature 2i holds sin of pair i's angle and feature 2i + 1 its cos, "
         "e.g. `pe[:, 0::2] = sin`, `pe[:, 1::2] = cos`.")
positions_family.mistake(
    "positions_exponent_per_feature", exponent="feature",
    name="a frequency per feature instead of per pair",
    hint="Features 2i and 2i + 1 share one angle, t / base ** (2i / d_model): take the exponent "
         "from `torch.arange(0, d_model, 2)`, not from every feature index.")
positions_family.mistake(
    "positions_ignore_base", fixed_base=10000.0,
    name="the base argument is ignored",
    hint="Use `base` in the angle, t / base ** (2i / d_model), rather than the number 10000.")
positions_family.mistake(
    "positions_from_one", start=1,
    name="positions counted from 1",
    hint="The first row is position 0: `torch.arange(T)` gives 0, 1, ..., T - 1.")


# ------------------------------------------------------------------ decoding with a cache

@catalogue.family("decode_step")
def decoding_family(ref, x, params, cache=None, *, order="cache_first", attend="all",
                    mask="offset", scale="sqrt", returns="dict"):
    """One decoding step with knobs: where the new keys go, what the new tokens attend to, how
    the causal mask is placed, the scale, what is returned."""
    q, k_new, v_new = x @ params["w_q"], x @ params["w_k"], x @ params["w_v"]
    if cache is None:
        k, v = k_new, v_new
    elif order == "cache_first":
        k, v = torch.cat([cache["k"], k_new], dim=-2), torch.cat([cache["v"], v_new], dim=-2)
    else:
        k, v = torch.cat([k_new, cache["k"]], dim=-2), torch.cat([v_new, cache["v"]], dim=-2)
    keys, values = (k_new, v_new) if attend == "new" else (k, v)
    S, total = x.shape[-2], keys.shape[-2]
    divisor = {"sqrt": math.sqrt(q.shape[-1]), "none": 1.0, "d": q.shape[-1]}[scale]
    scores = q @ keys.transpose(-2, -1) / divisor
    if mask != "none":
        offset = total - S + 1 if mask == "offset" else 1
        blocked = torch.ones(S, total, dtype=torch.bool).triu(diagonal=offset)
        scores = scores.masked_fill(blocked, float("-inf"))
    weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    out = weights / weights.sum(dim=-1, keepdim=True) @ values @ params["w_o"]
    if returns == "three":
        return out, k, v
    return out, {"k": k, "v": v}


decoding_family.mistake(
    "cache_after_new", order="new_first",
    name="the new keys and values put before the cached ones",
    hint="The cache keeps positions in order: the L cached tokens come first, then the new "
         "ones, `torch.cat([cache[\"k\"], k_new], dim=-2)`.")
decoding_family.mistake(
    "cache_ignored", attend="new",
    name="the new tokens attend only to each other",
    hint="Attend over the cached keys and values as well as the new ones: that is what the "
         "cache is for. Concatenate first, then compute the scores against all L + S keys.")
decoding_family.mistake(
    "mask_not_offset", mask="from_zero",
    name="the causal mask ignores the cached positions",
    hint="New token s sits at position L + s, so it may read every cached position and the new "
         "ones up to itself. The blocked part starts L + 1 columns right of the diagonal: "
         "`torch.ones(S, L + S, dtype=torch.bool).triu(diagonal=L + 1)`.")
decoding_family.mistake(
    "no_causal_mask", mask="none",
    name="new tokens attend to later new tokens",
    hint="When several tokens arrive at once, each may read only up to itself: block the "
         "scores of later positions with a causal mask before the softmax.")
decoding_family.mistake(
    "decoding_unscaled", scale="none",
    name="scores not divided by sqrt(d_model)",
    hint="Divide q @ k^T by the square root of the key size, `math.sqrt(q.shape[-1])`, before "
         "the softmax.")
decoding_family.mistake(
    "decoding_scaled_by_d", scale="d",
    name="scores divided by d_model instead of its square root",
    hint="Divide by the square root of the key size, `math.sqrt(q.shape[-1])`, not by the size "
         "itself.")
decoding_family.mistake(
    "cache_not_a_dict", returns="three",
    name="the keys and values returned beside the output instead of in a dict",
    hint="Return two things: the output and the new cache, a dict: "
         "`return output, {\"k\": keys, \"v\": values}`.")


# ------------------------------------------------------------------ the loss

@catalogue.family("next_token_loss")
def loss_family(ref, logits, targets, ignore_index=-100, *, reduce="mean", shift=True,
                padding="ignored", sign=1):
    """The loss with knobs: the reduction, the maximum taken out or not, how padding is
    treated, the sign. The accuracy is computed as the reference does."""
    counted = targets != ignore_index
    safe = targets if padding == "not_handled" else torch.where(counted, targets, 0)
    top = logits.amax(dim=-1, keepdim=True) if shift else torch.zeros_like(logits[..., :1])
    log_norm = top.squeeze(-1) + torch.log(torch.exp(logits - top).sum(dim=-1))
    picked = logits.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    per_position = torch.where(counted, sign * (log_norm - picked), torch.zeros_like(picked))
    denominator = {"ignored": counted.sum(), "counted": targets.numel(),
                   "not_handled": counted.sum()}[padding]
    loss = per_position.sum() if reduce == "sum" else per_position.sum() / denominator
    right = (logits.argmax(dim=-1) == targets) & counted
    return loss, float(right.sum()) / float(counted.sum())


loss_family.mistake(
    "loss_summed", reduce="sum",
    name="the loss summed instead of averaged",
    hint="Divide by the number of counted positions: the loss is the mean over positions, so "
         "it does not grow with the batch or the sequence length.")
loss_family.mistake(
    "loss_no_max", shift=False,
    name="log-sum-exp without taking the maximum out",
    hint="exp() of a large logit overflows to inf. Subtract each row's maximum before exp() "
         "and add it back after the log: `m + log(sum(exp(logits - m)))`.")
loss_family.mistake(
    "loss_counts_padding", padding="counted",
    name="the mean divides by every position, padding included",
    hint="Padding positions (target == ignore_index) count in neither the sum nor the number "
         "you divide by: divide by `(targets != ignore_index).sum()`.")
loss_family.mistake(
    "loss_padding_unhandled", padding="not_handled",
    name="padding targets used as token ids",
    hint="A target equal to `ignore_index` (-100) is not a token id: gather with a safe id at "
         "those positions (`torch.where(keep, targets, 0)`) and leave them out of the mean.")
loss_family.mistake(
    "loss_sign_flipped", sign=-1,
    name="the loss has the wrong sign",
    hint="The loss is minus the log-probability of the target: "
         "`log(sum(exp(logits))) - logits[target]`, which is never negative.")


# ------------------------------------------------------------------ any function

catalogue.rule(
    "library_shortcut", when=forbidden_call,
    name="the library version called instead of your own",
    hint="This question asks you to write the operation from basic tensor operations.")

catalogue.rule(
    "inplace_input", when=changed_input,
    name="an input modified in place",
    hint="Writing into an input (`x[...] = ...`, `x += ...`, `.add_()`) changes the caller's "
         "tensor. Compute a new tensor instead.")

catalogue.rule(
    "detached_gradient", when=gradient_cut,
    name="the gradient is cut (detach, .numpy() or .item())",
    hint="The values are right, but no gradient reaches an input. Keep every step in torch "
         "tensors: `.detach()`, `.item()`, a NumPy round trip or `torch.tensor(...)` on a "
         "result disconnects it from autograd.")

catalogue.rule(
    "float32_cast", when=any_of(lowered_precision, mixed_precision_error, computed_in_float32),
    name="float64 computed in float32",
    hint="Keep the input's dtype: create new tensors with `dtype=x.dtype` (the encodings in the "
         "tokens' dtype), and do not call `.float()` on the inputs.")

catalogue.rule(
    "float32_rounding", when=all_of(float32_rounding, not_(computed_in_float32)),
    name="float32 rounding inside float64 maths",
    hint="Your float64 result carries float32 rounding: something float32 entered the "
         "computation, e.g. encodings made in the default dtype and added to float64 tokens. "
         "Make them in the tokens' dtype.")

catalogue.fallback_rule(
    "fixed_rank", when=fixed_rank, detail=fixed_rank_detail, crashes=True,
    name="code written for one number of dimensions",
    hint="Accept any number of leading dimensions: count dimensions from the end "
         "(`*lead, C, H, W = images.shape`, `x.shape[-2]`, `k.transpose(-2, -1)`) instead of "
         "unpacking a fixed number of them.")
