"""Known mistakes of the attention assignment, named in feedback when a case shows one.

A variant is the reference's function as the mistake computes it: `impl(ref, *args, **kwargs)`,
`ref` being the unmodified reference module. A variant of one function also explains the
functions whose reference calls it (a `softmax` variant explains attention, multi-head attention
and the block). `when=` takes a rule on what the student's outcome shows; on a variant it narrows
it. The grader names a mistake only if exactly one matches and the reference does not.

Adding a mistake: a decorated function here (or a `catalogue.rule`), a `# diagnosis: <id>` line
in a corpus file that makes it, and `autograder diagnose-eval -a attention` to measure.
Like the reference, this file is instructor-only: it must not be shipped to students.
"""
import math
import warnings

import torch
import torch.nn.functional as F

from autograder.diagnose import (Catalogue, all_of, any_of, axis_detail, changed_input,
                                 equals_expected_transposed, expected_dtype, factor_detail,
                                 fixed_rank, fixed_rank_detail, float32_rounding, forbidden_call,
                                 gradient_cut, lowered_precision, mixed_precision_error,
                                 nan_only_on_large_inputs, none_unhandled,
                                 normalised_along_other_axis, off_by_constant_factor,
                                 sums_to_one_along, values_right_dtype_wrong)

catalogue = Catalogue()
mistake = catalogue.variant


def _attention(ref, q, k, v, mask=None, *, scale=None, fill=float("-inf"), dim=-1):
    """The reference attention with one knob turned (the scale, the fill value, the axis)."""
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    if mask is not None:
        scores = scores.masked_fill(mask, fill)
    weights = ref.softmax(scores, dim=dim)
    return weights @ v, weights


def _heads(ref, x, params, n_heads, context=None):
    source = x if context is None else context
    return (ref.split_heads(x @ params["w_q"], n_heads),
            ref.split_heads(source @ params["w_k"], n_heads),
            ref.split_heads(source @ params["w_v"], n_heads))


def _ffn(h, params, act=torch.relu):
    return act(h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


# ------------------------------------------------------------------ softmax

@mistake("softmax_no_max", "softmax", when=nan_only_on_large_inputs,
         name="softmax without subtracting the maximum",
         hint="exp() of a large logit overflows to inf (and of a very negative one underflows "
              "to 0), so the division gives NaN. Subtract the maximum along `dim` before exp(): "
              "shifting a row does not change its softmax.")
def _(ref, x, dim=-1):
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


@mistake("softmax_global_max", "softmax",
         name="softmax subtracts the maximum of the whole tensor",
         hint="Rows far below the overall maximum underflow to 0/0 = NaN. Subtract each row's own "
              "maximum: `x.amax(dim=dim, keepdim=True)`.")
def _(ref, x, dim=-1):
    e = torch.exp(x - x.max())
    return e / e.sum(dim=dim, keepdim=True)


@mistake("softmax_ignores_dim", "softmax", when=sums_to_one_along(-1),
         name="softmax always normalises over the last dimension",
         hint="Your probabilities sum to 1 along the last axis even when another `dim` is asked "
              "for. Use `dim` in both the maximum and the sum.")
def _(ref, x, dim=-1):
    return ref.softmax(x, dim=-1)


# Ways of taking the row maximum. The values agree; the gradients differ on ties (max routes
# them to one element, amax shares them) and when the maximum is detached. In a right softmax
# that gradient cancels out; in the two mistakes below it does not, so each needs all three.
_ROW_MAX = [lambda x, dim: x.amax(dim=dim, keepdim=True),
            lambda x, dim: x.max(dim=dim, keepdim=True).values,
            lambda x, dim: x.amax(dim=dim, keepdim=True).detach()]

catalogue.describe("softmax_sum_all", name="softmax divides by the sum of every element",
                   hint="Normalise each slice along `dim` on its own: "
                        "`e.sum(dim=dim, keepdim=True)`, not `e.sum()`.")
catalogue.describe("softmax_detached_sum", name="the softmax denominator is detached",
                   hint="The values are right but gradients are not: the sum you divide by "
                        "depends on x too. Remove the `.detach()` (or `.item()`) on the "
                        "denominator; detaching only the maximum is fine.")

for _i, _row_max in enumerate(_ROW_MAX):
    @mistake("softmax_sum_all", "softmax", alternative=_i)
    def _(ref, x, dim=-1, row_max=_row_max):
        e = torch.exp(x - row_max(x, dim))
        return e / e.sum()

    @mistake("softmax_detached_sum", "softmax", alternative=_i)
    def _(ref, x, dim=-1, row_max=_row_max):
        e = torch.exp(x - row_max(x, dim))
        return e / e.sum(dim=dim, keepdim=True).detach()


@mistake("softmax_sum_all", "softmax", alternative=len(_ROW_MAX))    # everything global
def _(ref, x, dim=-1):
    e = torch.exp(x - x.max())
    return e / e.sum()


# ------------------------------------------------------------------ scaled dot-product attention

@mistake("scale_by_dk", "scaled_dot_product_attention",
         name="scores divided by d_k instead of sqrt(d_k)",
         hint="Divide q @ k^T by the square root of the key size: `math.sqrt(q.shape[-1])`.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, scale=q.shape[-1])


@mistake("no_scaling", "scaled_dot_product_attention",
         name="scores not scaled by 1/sqrt(d_k)",
         hint="Without the scale, long vectors give large scores and softmax puts almost all "
              "weight on one key. Divide q @ k^T by `math.sqrt(d_k)`.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, scale=1.0)


@mistake("dk_from_fixed_axis", "scaled_dot_product_attention",
         name="d_k read from a fixed axis (q.shape[1]) instead of the last one",
         hint="With batch or head dimensions, `q.shape[1]` is not the key size. Use "
              "`q.shape[-1]`.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, scale=math.sqrt(q.shape[1]))


@mistake("key_dot_T", "scaled_dot_product_attention",
         name="keys transposed with k.T",
         hint="`.T` reverses every dimension, so it only works for 2-D tensors. Swap the last "
              "two with `k.transpose(-2, -1)`.")
def _(ref, q, k, v, mask=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # torch deprecates .T beyond 2-D
        scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = ref.softmax(scores, dim=-1)
    return weights @ v, weights


@mistake("weights_wrong_axis", "scaled_dot_product_attention",
         name="softmax over the query axis instead of the key axis",
         hint="Each query's weights over the keys must sum to 1: softmax over the last dimension "
              "(dim=-1), not dim=-2.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, dim=-2)


@mistake("weights_wrong_axis", "scaled_dot_product_attention", alternative=1)
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, dim=-2, fill=torch.finfo(q.dtype).min)


@mistake("returns_output_only", "scaled_dot_product_attention",
         name="attention returns only the output",
         hint="Return both tensors, in this order: `return output, weights`.")
def _(ref, q, k, v, mask=None):
    return ref.scaled_dot_product_attention(q, k, v, mask)[0]


@mistake("returns_swapped", "scaled_dot_product_attention",
         name="attention returns (weights, output)",
         hint="The contract is `(output, weights)`: the output first.")
def _(ref, q, k, v, mask=None):
    out, weights = ref.scaled_dot_product_attention(q, k, v, mask)
    return weights, out


# ------------------------------------------------------------------ the causal mask

@mistake("mask_inverted", "causal_mask",
         name="causal mask inverted (True on and below the diagonal)",
         hint="True means blocked: block the future, j > i, i.e. "
              "`torch.ones(T, T, dtype=torch.bool).triu(1)`.")
def _(ref, T):
    return ~ref.causal_mask(T)


@mistake("mask_blocks_diagonal", "causal_mask",
         name="causal mask shifted by one: it blocks the diagonal",
         hint="A position may attend to itself: block only j > i (`triu(1)`, not `triu(0)`).")
def _(ref, T):
    return torch.ones(T, T, dtype=torch.bool).triu(0)


catalogue.rule(
    "mask_transposed", functions=["causal_mask"], when=equals_expected_transposed(),
    name="causal mask transposed (it blocks the past)",
    hint="Row i is the query, column j the key: block j > i, above the diagonal.")

catalogue.rule(
    "mask_not_bool", functions=["causal_mask"],
    when=all_of(expected_dtype("bool"), values_right_dtype_wrong),
    name="causal mask returned as numbers instead of booleans",
    hint="The right positions, but the mask must be a bool tensor: build it with "
         "`dtype=torch.bool` or compare (`j > i`).")


# ------------------------------------------------------------------ masked attention

@mistake("mask_fill_zero", "scaled_dot_product_attention",
         name="blocked scores set to 0 instead of -inf",
         hint="exp(0) = 1, so blocked positions still get weight. Fill them with `float('-inf')` "
              "(or a very negative number) before the softmax.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, fill=0.0)


@mistake("mask_fill_too_small", "scaled_dot_product_attention",
         name="blocked scores filled with -1e4, which large scores outweigh",
         hint="A finite fill only blocks when it is far below every real score: with scores of "
              "size 1e4 a blocked position filled with (or shifted by) -1e4 still gets weight. "
              "Use `float('-inf')`, `-1e9` or `torch.finfo(scores.dtype).min`.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, mask, fill=-1e4)


@mistake("mask_fill_too_small", "scaled_dot_product_attention", alternative=1)
def _(ref, q, k, v, mask=None):
    """The additive form of old tutorials: scores + mask * -10000."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask.to(scores.dtype) * -1e4
    weights = ref.softmax(scores, dim=-1)
    return weights @ v, weights


@mistake("mask_ignored", "scaled_dot_product_attention",
         name="the mask is never applied",
         hint="When `mask` is given, fill the blocked scores with -inf before the softmax: "
              "`scores.masked_fill(mask, float('-inf'))`.")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, None)


@mistake("mask_after_softmax", "scaled_dot_product_attention",
         name="the mask is applied after the softmax",
         hint="Zeroing weights after the softmax leaves rows that no longer sum to 1. Mask the "
              "scores before the softmax.")
def _(ref, q, k, v, mask=None):
    weights = ref.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ v, weights


@mistake("mask_keep_convention", "scaled_dot_product_attention",
         name="the mask read as True = keep",
         hint="In this assignment True means blocked: fill where `mask` is True, not where it is "
              "False (`masked_fill(mask, ...)`, not `masked_fill(mask == 0, ...)` or `~mask`).")
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, None if mask is None else ~mask)


@mistake("mask_keep_convention", "scaled_dot_product_attention", alternative=1)
def _(ref, q, k, v, mask=None):
    return _attention(ref, q, k, v, None if mask is None else ~mask,
                      fill=torch.finfo(q.dtype).min)


# ------------------------------------------------------------------ split and merge heads

def _split_no_transpose(ref, x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, n_heads, T, d_model // n_heads)


def _merge_no_transpose(ref, x):
    *lead, n_heads, T, d_head = x.shape
    return x.reshape(*lead, T, n_heads * d_head)


def _split_strided(ref, x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, d_model // n_heads, n_heads).movedim(-1, -3)


def _merge_strided(ref, x):
    return x.movedim(-3, -1).flatten(-2)


_SPLIT_HINT = ("Reshape to (..., T, n_heads, d_head) first, then swap T and the heads with "
               "`.transpose(-3, -2)`; head i must hold features i*d_head:(i+1)*d_head.")

mistake("split_no_transpose", "split_heads", name="split_heads reshapes without transposing",
        hint="Reshaping straight to (..., n_heads, T, d_head) mixes time steps into heads. "
             + _SPLIT_HINT)(_split_no_transpose)
mistake("split_no_transpose", "merge_heads")(_merge_no_transpose)     # the mirrored merge
mistake("split_no_transpose", "split_heads", alternative=1)(_split_no_transpose)

mistake("split_strided_features", "split_heads",
        name="split_heads gives each head every n_heads-th feature",
        hint="Unflattening d_model as (d_head, n_heads) interleaves the heads. "
             + _SPLIT_HINT)(_split_strided)
mistake("split_strided_features", "merge_heads")(_merge_strided)
mistake("split_strided_features", "split_heads", alternative=1)(_split_strided)

mistake("merge_no_transpose", "merge_heads", name="merge_heads reshapes without transposing",
        hint="Swap the heads and time back first, `.transpose(-3, -2)`, then reshape to "
             "(..., T, n_heads * d_head).")(_merge_no_transpose)


@mistake("merge_wrong_order", "merge_heads",
         name="merge_heads concatenates in the wrong order",
         hint="Move the heads next to d_head as (..., T, n_heads, d_head) before flattening, so "
              "head 0's features come first.")
def _(ref, x):
    return x.movedim(-3, -1).flatten(-2)


@mistake("merge_view_noncontiguous", "merge_heads",
         name="merge_heads calls .view on a transposed tensor",
         hint="A transposed tensor is not contiguous, so `.view` fails. Use `.reshape`, or "
              "`.contiguous().view(...)`.")
def _(ref, x):
    *lead, n_heads, T, d_head = x.shape
    return x.transpose(-3, -2).view(*lead, T, n_heads * d_head)


# ------------------------------------------------------------------ multi-head attention

@mistake("scale_by_d_model", "multi_head_attention",
         name="multi-head scores scaled by sqrt(d_model) instead of sqrt(d_head)",
         hint="Each head attends with vectors of size d_head = d_model // n_heads; scale by "
              "`math.sqrt(d_head)` (calling your scaled_dot_product_attention does this).")
def _(ref, x, params, n_heads, mask=None, context=None):
    q, k, v = _heads(ref, x, params, n_heads, context)
    out, _ = _attention(ref, q, k, v, mask, scale=math.sqrt(x.shape[-1]))
    return ref.merge_heads(out) @ params["w_o"]


@mistake("mha_no_split", "multi_head_attention",
         name="multi-head attention computed as one head",
         hint="Split q, k and v into n_heads heads with split_heads, attend per head, then "
              "merge_heads.")
def _(ref, x, params, n_heads, mask=None, context=None):
    q, k, v = _heads(ref, x, params, 1, context)
    out, _ = ref.scaled_dot_product_attention(q, k, v, mask)
    return ref.merge_heads(out) @ params["w_o"]


@mistake("mha_no_split", "multi_head_attention", alternative=1)   # no split_heads call at all
def _(ref, x, params, n_heads, mask=None, context=None):
    source = x if context is None else context
    out, _ = ref.scaled_dot_product_attention(x @ params["w_q"], source @ params["w_k"],
                                              source @ params["w_v"], mask)
    return out @ params["w_o"]


@mistake("missing_output_projection", "multi_head_attention",
         name="the output projection w_o is missing",
         hint="After merging the heads, multiply by `params['w_o']`.")
def _(ref, x, params, n_heads, mask=None, context=None):
    out, _ = ref.scaled_dot_product_attention(*_heads(ref, x, params, n_heads, context), mask)
    return ref.merge_heads(out)


@mistake("ignores_context", "multi_head_attention",
         name="cross-attention ignores the context",
         hint="When `context` is given, keys and values come from it (queries still come from "
              "x).")
def _(ref, x, params, n_heads, mask=None, context=None):
    return ref.multi_head_attention(x, params, n_heads, mask)


@mistake("queries_from_context", "multi_head_attention",
         name="cross-attention takes queries from the context",
         hint="Queries come from x; keys and values come from `context`.")
def _(ref, x, params, n_heads, mask=None, context=None):
    if context is None:
        return ref.multi_head_attention(x, params, n_heads, mask)
    q = ref.split_heads(context @ params["w_q"], n_heads)
    k = ref.split_heads(x @ params["w_k"], n_heads)
    v = ref.split_heads(x @ params["w_v"], n_heads)
    out, _ = ref.scaled_dot_product_attention(q, k, v, mask)
    return ref.merge_heads(out) @ params["w_o"]


@mistake("mha_drops_mask", "multi_head_attention",
         name="multi-head attention does not pass the mask on",
         hint="Give `mask` to scaled_dot_product_attention.")
def _(ref, x, params, n_heads, mask=None, context=None):
    return ref.multi_head_attention(x, params, n_heads, None, context)


@mistake("weights_transposed", "multi_head_attention",
         name="projections applied as x @ w.T",
         hint="The contract applies each weight as `x @ w` (no transpose).")
def _(ref, x, params, n_heads, mask=None, context=None):
    turned = {**params, **{k: params[k].T for k in ("w_q", "w_k", "w_v", "w_o")}}
    return ref.multi_head_attention(x, turned, n_heads, mask, context)


# ------------------------------------------------------------------ layer norm

def _layer_norm(x, gamma, beta, var, eps, outside=False):
    mean = x.mean(dim=-1, keepdim=True)
    std = torch.sqrt(var) + eps if outside else torch.sqrt(var + eps)
    return (x - mean) / std * gamma + beta


@mistake("unbiased_variance", "layer_norm",
         name="layer norm with the unbiased variance",
         hint="Layer norm divides by n, not n - 1: use `x.var(dim=-1, unbiased=False)` (or the "
              "mean of the squared deviations).")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, x.var(dim=-1, keepdim=True), eps)


@mistake("eps_outside_sqrt", "layer_norm",
         name="eps added outside the square root",
         hint="Divide by `sqrt(var + eps)`, not `sqrt(var) + eps`.")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, x.var(dim=-1, keepdim=True, unbiased=False), eps,
                       outside=True)


@mistake("layer_norm_ignores_eps", "layer_norm",
         name="layer norm ignores its eps argument",
         hint="Use the `eps` you are given, not a fixed 1e-5.")
def _(ref, x, gamma, beta, eps=1e-5):
    return ref.layer_norm(x, gamma, beta, 1e-5)


@mistake("layer_norm_global_stats", "layer_norm",
         name="layer norm statistics over every element",
         hint="Normalise each token on its own: mean and variance over the last dimension "
              "(`dim=-1, keepdim=True`).")
def _(ref, x, gamma, beta, eps=1e-5):
    mean = x.mean()
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean() + eps) * gamma + beta


@mistake("stats_without_grad", "layer_norm",
         name="layer norm statistics computed without gradient",
         hint="The mean and variance depend on x, so gradients must flow through them: do not "
              "compute them under `torch.no_grad()` or detach them.")
def _(ref, x, gamma, beta, eps=1e-5):
    with torch.no_grad():
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


# ------------------------------------------------------------------ the transformer block

@mistake("pre_norm", "transformer_block",
         name="a pre-norm block instead of post-norm",
         hint="This block is post-norm: `h = layer_norm(x + mha(x))`, then "
              "`layer_norm(h + ffn(h))`, not `x + mha(layer_norm(x))`.")
def _(ref, x, params, n_heads, mask=None):
    a = ref.layer_norm(x, params["ln1_gamma"], params["ln1_beta"])
    h = x + ref.multi_head_attention(a, params, n_heads, mask)
    b = ref.layer_norm(h, params["ln2_gamma"], params["ln2_beta"])
    return h + _ffn(b, params)


@mistake("missing_ffn_residual", "transformer_block",
         name="no residual connection around the feed-forward layer",
         hint="Add h back before the second layer norm: `layer_norm(h + ffn(h))`.")
def _(ref, x, params, n_heads, mask=None):
    h = ref.layer_norm(x + ref.multi_head_attention(x, params, n_heads, mask),
                       params["ln1_gamma"], params["ln1_beta"])
    return ref.layer_norm(_ffn(h, params), params["ln2_gamma"], params["ln2_beta"])


@mistake("missing_attention_residual", "transformer_block",
         name="no residual connection around the attention",
         hint="Add x back before the first layer norm: `layer_norm(x + mha(x))`.")
def _(ref, x, params, n_heads, mask=None):
    h = ref.layer_norm(ref.multi_head_attention(x, params, n_heads, mask),
                       params["ln1_gamma"], params["ln1_beta"])
    return ref.layer_norm(h + _ffn(h, params), params["ln2_gamma"], params["ln2_beta"])


@mistake("ffn_gelu", "transformer_block",
         name="GELU instead of ReLU in the feed-forward layer",
         hint="This block uses ReLU: `torch.relu(h @ w1 + b1) @ w2 + b2`.")
def _(ref, x, params, n_heads, mask=None):
    h = ref.layer_norm(x + ref.multi_head_attention(x, params, n_heads, mask),
                       params["ln1_gamma"], params["ln1_beta"])
    return ref.layer_norm(h + _ffn(h, params, F.gelu), params["ln2_gamma"], params["ln2_beta"])


@mistake("ffn_gelu", "transformer_block", alternative=1)
def _(ref, x, params, n_heads, mask=None):
    h = ref.layer_norm(x + ref.multi_head_attention(x, params, n_heads, mask),
                       params["ln1_gamma"], params["ln1_beta"])
    act = lambda t: F.gelu(t, approximate="tanh")  # noqa: E731
    return ref.layer_norm(h + _ffn(h, params, act), params["ln2_gamma"], params["ln2_beta"])


@mistake("ffn_no_activation", "transformer_block",
         name="no activation in the feed-forward layer",
         hint="Apply ReLU between the two linear layers: `torch.relu(h @ w1 + b1) @ w2 + b2`.")
def _(ref, x, params, n_heads, mask=None):
    h = ref.layer_norm(x + ref.multi_head_attention(x, params, n_heads, mask),
                       params["ln1_gamma"], params["ln1_beta"])
    return ref.layer_norm(h + _ffn(h, params, lambda t: t), params["ln2_gamma"],
                          params["ln2_beta"])


@mistake("block_drops_mask", "transformer_block",
         name="the block does not pass the mask to attention",
         hint="Give `mask` to multi_head_attention inside the block.")
def _(ref, x, params, n_heads, mask=None):
    return ref.transformer_block(x, params, n_heads)


# ------------------------------------------------------------------ any function

catalogue.rule(
    "detached_gradient", when=gradient_cut,
    name="the gradient is cut (detach, .numpy() or .item())",
    hint="The values are right, but no gradient reaches an input. Keep every step in torch "
         "tensors: a NumPy round trip, `.detach()`, `.item()` or `torch.tensor(...)` on a "
         "result disconnects it from autograd.")

catalogue.rule(
    "float32_cast", when=any_of(lowered_precision, mixed_precision_error),
    name="float64 inputs converted to float32",
    hint="Keep the input's dtype: no `.float()` or `dtype=torch.float32`; new tensors can "
         "take `dtype=x.dtype`.")

catalogue.rule(
    "float32_rounding", when=float32_rounding,
    name="float32 rounding inside float64 maths",
    hint="Your float64 result carries float32 rounding: a float32 constant or cast entered the "
         "computation, e.g. `torch.tensor(d_k)` or `torch.FloatTensor([d])` (both float32). "
         "Use `math.sqrt(d_k)` for a plain number, or create tensors with `dtype=x.dtype`.")

catalogue.rule(
    "inplace_input", when=changed_input,
    name="an input modified in place",
    hint="`x -= m`, `x[...] = ...` or `.add_()` change the caller's tensor and break autograd. "
         "Compute a new tensor instead: `x = x - m`.")

catalogue.rule(
    "library_shortcut", when=forbidden_call,
    name="the library version called instead of your own",
    hint="This question asks you to write the operation from basic tensor operations.")


# ------------------------------------------------------------------ two mistakes together

@catalogue.combination(("unbiased_variance", "eps_outside_sqrt"), "layer_norm")
def _(ref, x, gamma, beta, eps=1e-5):
    return _layer_norm(x, gamma, beta, x.var(dim=-1, keepdim=True), eps, outside=True)


# ------------------------------------------------------------------ when nothing else fits
# Fallback rules: tried only when no mistake above explains a case. They read the function's
# other cases (which ranks run, which fail and how) and the failing line.

_MASKED = ["scaled_dot_product_attention", "multi_head_attention", "transformer_block"]

catalogue.fallback_rule(
    "fixed_rank", when=fixed_rank, detail=fixed_rank_detail,
    name="code written for one number of dimensions",
    hint="Every function must accept any number of leading dimensions, (T, d) as well as "
         "(B, T, d) or (B, H, T, d). Count dimensions from the end: `x.shape[-1]`, "
         "`k.transpose(-2, -1)`, `*lead, T, d = x.shape` (or `x.shape[:-1]`) instead of "
         "`B, T, C = x.shape`, and `x.reshape(*x.shape[:-1], n_heads, d_head)` instead of "
         "`view(B, T, H, D)`; use `@` rather than `bmm`.")

catalogue.fallback_rule(
    "mask_none_unhandled", functions=_MASKED, when=none_unhandled("mask", 3),
    name="`mask=None` is not handled",
    hint="Every case without a mask fails while the masked ones run: with `mask=None`, skip "
         "the masking step (`if mask is not None: scores = scores.masked_fill(mask, "
         "float('-inf'))`) instead of passing None to `masked_fill` or `torch.where`.")

catalogue.fallback_rule(
    "off_by_constant_factor", when=off_by_constant_factor, detail=factor_detail,
    name="values off by a large constant factor",
    hint="A factor this size usually comes from a small constant used the wrong way: check "
         "every place a constant such as eps enters the formula, e.g. `std + eps`, not "
         "`std * eps`, and multiplications that should be divisions.")

catalogue.fallback_rule(
    "softmax_fixed_axis", functions=["softmax"],
    when=normalised_along_other_axis("dim", 1), detail=axis_detail("dim", 1),
    name="softmax normalises along a fixed axis",
    hint="Use the `dim` argument everywhere an axis appears: "
         "`x.amax(dim=dim, keepdim=True)` and `e.sum(dim=dim, keepdim=True)`.")
