"""Known mistakes of the attention assignment, named in feedback when a case shows one.

A variant is the reference's function as the mistake computes it: `impl(ref, *args, **kwargs)`,
where `ref.f` is the reference's own `f` for the function replaced and, for the others, the
version of the module the variant runs in. A variant of one function also explains the
functions whose reference calls it (a `softmax` variant explains attention, multi-head attention
and the block). Most functions are written once with knobs (`catalogue.family`), each mistake
turning some of them, so that mistakes made together can be named together
(autograder.diagnose.causes). `when=` takes a rule on what the student's outcome shows; on a
variant it narrows it. The grader names a mistake only if exactly one matches and the reference
does not. The NumPy track's catalogue uses the same ids and names (docs/naming-mistakes.md).

Adding a mistake: a family setting or a decorated function here (or a `catalogue.rule`), a
`# diagnosis: <id>` line in a corpus file that makes it, and `autograder diagnose-eval -a
attention` to measure.
Like the reference, this file is instructor-only: it must not be shipped to students.
"""
import math
import warnings

import torch
import torch.nn.functional as F

from autograder.catalogue import (Catalogue, all_of, any_of, axis_detail, changed_input,
                                  computed_in_float32, equals_expected_transposed, expected_dtype,
                                  factor_detail, fixed_rank, fixed_rank_detail, float32_rounding,
                                  forbidden_call, gradient_cut, lowered_precision,
                                  mixed_precision_error, nan_only_on_large_inputs, none_unhandled,
                                  normalised_along_other_axis, not_, off_by_constant_factor,
                                  raised, sums_to_one_along, values_right_dtype_wrong)

catalogue = Catalogue()
mistake = catalogue.variant

# The code constructs some mistakes are made with (regular expressions on the student's code,
# comments and strings left out): without one in the code a case runs, the mistake is named
# only where its variant reproduces the outcome exactly (a rule: never).
_DOT_T = r"\.T\b|\.t\(\s*\)"
_FILL_1E4 = r"\b1(\.0*)?e\+?0*4\b|\b10_?000(\.0*)?\b"
_FLOAT32 = (r"float32|\.float\(|FloatTensor|\.half\(|float16|bfloat16|\.to\(|\.type\("
            r"|\.numpy\(|tolist\(|\btensor\(|as_tensor\(|from_numpy\(|\b(zeros|ones|empty|full)\(")


# ------------------------------------------------------------------ softmax
# One softmax with knobs: each mistake below turns some of them, and mistakes that turn
# different knobs can be named together (autograder.diagnose.causes).

# Ways of taking the row maximum. The values agree; the gradients differ on ties (max routes
# them to one element, amax shares them) and when the maximum is detached. In a right softmax
# that gradient cancels out; in some mistakes below it does not, so those need all three.
_ROW_MAX = [lambda x, dim, keep: x.amax(dim=dim, keepdim=keep),
            lambda x, dim, keep: x.max(dim=dim, keepdim=keep).values,
            lambda x, dim, keep: x.amax(dim=dim, keepdim=keep).detach()]
# `dim` not passed at all: a default of the student's own (`default`) then decides the axis.
_NOT_PASSED = object()


@catalogue.family("softmax")
def softmax_family(ref, x, dim=_NOT_PASSED, *, shift="row", row_max=0, over="dim",
                   sum_over="dim", detach_sum=False, default=-1, keep_max=True,
                   keep_sum=True):
    if dim is _NOT_PASSED:
        dim = default
    if dim is None:         # a default of None: every reduction over the whole tensor
        shift = "global" if shift == "row" else shift
        sum_over = "all"
    d = -1 if over == "last" else dim
    if shift == "row":
        m = _ROW_MAX[row_max](x, d, keep_max)
    elif shift == "global":
        m = x.max()
    elif shift == "min":
        m = x.amin(dim=d, keepdim=True)
    else:
        m = 0
    e = torch.exp(x - m)
    s = e.sum() if sum_over == "all" else e.sum(dim=d, keepdim=keep_sum)
    return e / (s.detach() if detach_sum else s)


softmax_family.mistake(
    "softmax_no_max", shift="none", when=nan_only_on_large_inputs,
    name="softmax without subtracting the maximum",
    hint="exp() of a large logit overflows to inf (and of a very negative one underflows to "
         "0), so the division gives NaN. Subtract the maximum along `dim` before exp(): "
         "shifting a row does not change its softmax.")
softmax_family.mistake(
    "softmax_global_max", shift="global",
    name="softmax subtracts the maximum of the whole tensor",
    hint="Rows far below the overall maximum underflow to 0/0 = NaN. Subtract each row's own "
         "maximum: `x.amax(dim=dim, keepdim=True)`.")
softmax_family.mistake(
    "softmax_subtracts_min", shift="min",
    name="softmax subtracts the minimum instead of the maximum",
    hint="Shifting by the minimum makes every exponent >= 0, so large logits overflow to inf "
         "and the division gives NaN. Subtract each row's maximum: "
         "`x.amax(dim=dim, keepdim=True)`.")
softmax_family.mistake(
    "softmax_ignores_dim", over="last", when=sums_to_one_along(-1),
    name="softmax always normalises over the last dimension",
    hint="Your probabilities sum to 1 along the last axis even when another `dim` is asked "
         "for. Use `dim` in both the maximum and the sum.")
catalogue.describe("softmax_sum_all", name="softmax divides by the sum of every element",
                   hint="Normalise each slice along `dim` on its own: "
                        "`e.sum(dim=dim, keepdim=True)`, not `e.sum()`.")
catalogue.describe("softmax_detached_sum", name="the softmax denominator is detached",
                   hint="The values are right but gradients are not: the sum you divide by "
                        "depends on x too. Remove the `.detach()` (or `.item()`) on the "
                        "denominator; detaching only the maximum is fine.")
for _i in range(len(_ROW_MAX)):
    softmax_family.mistake("softmax_sum_all", alternative=_i, row_max=_i, sum_over="all")
    softmax_family.mistake("softmax_detached_sum", alternative=_i, row_max=_i, detach_sum=True)
softmax_family.mistake("softmax_sum_all", alternative=len(_ROW_MAX), shift="global",
                       sum_over="all")      # everything global
# A softmax whose own default axis is not the last: right where `dim` is given, wrong where it
# is left out (below, also in an attention that leaves it out).
catalogue.describe(
    "softmax_default_axis", name="softmax's default dimension is not the last one",
    hint="A call without `dim` must normalise over the last dimension: write `def softmax(x, "
         "dim=-1)`. A default of None normalises the whole tensor at once, and a fixed index "
         "such as 0 or 1 is the last dimension for one number of dimensions only; the calls "
         "that pass `dim` are right already.",
    leaves_others_right=True)
_DEFAULTS = [None, 0, 1]
for _i, _default in enumerate(_DEFAULTS):
    softmax_family.mistake("softmax_default_axis", alternative=_i, default=_default)
catalogue.describe(
    "softmax_no_keepdim",
    name="the softmax's maximum or sum drops the reduced dimension (no keepdim=True)",
    hint="`x.max(dim=dim).values` and `e.sum(dim=dim)` remove the dimension they reduce, so "
         "subtracting or dividing lines the result up with the wrong axis: each row gets "
         "another row's maximum or sum (or the shapes clash). Keep the dimension: "
         "`x.amax(dim=dim, keepdim=True)` and `e.sum(dim=dim, keepdim=True)`.")
for _i, (_keep_max, _keep_sum) in enumerate([(False, True), (True, False), (False, False)]):
    for _j in range(2):     # amax or max(...).values: their gradients differ on ties
        softmax_family.mistake("softmax_no_keepdim", alternative=2 * _i + _j, row_max=_j,
                               keep_max=_keep_max, keep_sum=_keep_sum)


# ------------------------------------------------------------------ scaled dot-product attention

def _scale(name, q, k, v):
    return {"sqrt_dk": lambda: math.sqrt(q.shape[-1]), "dk": lambda: q.shape[-1],
            "one": lambda: 1.0, "sqrt_axis1": lambda: math.sqrt(q.shape[1]),
            "sqrt_dv": lambda: math.sqrt(v.shape[-1])}[name]()


_FINFO_MIN = "finfo"    # a fill of the dtype's lowest value, torch.finfo(dtype).min


@catalogue.family("scaled_dot_product_attention")
def attention_family(ref, q, k, v, mask=None, *, scale="sqrt_dk", keys="transpose",
                     fill=float("-inf"), masking="fill", dim=-1, scale_after=False,
                     returns="both"):
    """The reference attention with knobs: the scale, how the keys are transposed, how the
    mask is applied (and with what), the softmax's axis, what is returned."""
    if keys == "T":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # torch deprecates .T beyond 2-D
            scores = q @ k.T
    elif keys == "none":
        scores = q @ k
    else:
        scores = q @ k.transpose(-2, -1)
    s = _scale(scale, q, k, v)
    if not scale_after:
        scores = scores / s
    if fill == _FINFO_MIN:
        fill = torch.finfo(scores.dtype).min
    if mask is not None:
        if masking == "fill":
            scores = scores.masked_fill(mask, fill)
        elif masking == "inverted":
            scores = scores.masked_fill(~mask, fill)
        elif masking == "add_scaled":       # old tutorials: scores + mask * -10000
            scores = scores + mask.to(scores.dtype) * -1e4
        elif masking == "add_bool":         # the boolean mask itself added: +1 where blocked
            scores = scores + mask
    if dim is None:     # a softmax over every score at once
        e = torch.exp(scores - scores.max())
        weights = e / e.sum()
    else:
        weights = ref.softmax(scores, dim=dim)
    if scale_after:
        weights = weights / s
    if mask is not None and masking == "after":
        weights = weights.masked_fill(mask, 0.0)
    out = weights @ v
    return {"both": (out, weights), "output": out, "swapped": (weights, out)}[returns]


attention_family.mistake(
    "scale_by_dk", scale="dk", name="scores divided by d_k instead of sqrt(d_k)",
    hint="Divide q @ k^T by the square root of the key size: `math.sqrt(q.shape[-1])`.")
attention_family.mistake(
    "no_scaling", scale="one", name="scores not scaled by 1/sqrt(d_k)",
    hint="Without the scale, long vectors give large scores and softmax puts almost all "
         "weight on one key. Divide q @ k^T by `math.sqrt(d_k)`.")
attention_family.mistake(
    "dk_from_fixed_axis", scale="sqrt_axis1",
    name="d_k read from a fixed axis (q.shape[1]) instead of the last one",
    hint="With batch or head dimensions, `q.shape[1]` is not the key size. Use "
         "`q.shape[-1]`.")
attention_family.mistake(
    "scale_by_dv", scale="sqrt_dv",
    name="scores scaled by the value size sqrt(d_v) instead of the key size sqrt(d_k)",
    hint="The scale comes from the size of the vectors in the dot product, the queries and "
         "keys: `math.sqrt(q.shape[-1])`, not `v.shape[-1]` (the two differ when d_v != d_k).")
attention_family.mistake(
    "scale_after_softmax", scale_after=True,
    name="the scale applied after the softmax",
    hint="Dividing the weights instead of the scores leaves rows that sum to 1/sqrt(d_k). "
         "Divide q @ k^T by `math.sqrt(d_k)` before the softmax.")
attention_family.mistake(
    "key_dot_T", keys="T", construct=_DOT_T, name="keys transposed with k.T",
    hint="`.T` reverses every dimension, so it only works for 2-D tensors. Swap the last "
         "two with `k.transpose(-2, -1)`.")
attention_family.mistake(
    "keys_not_transposed", keys="none", name="keys not transposed (q @ k instead of q @ k^T)",
    hint="Each score is a query's dot product with a key, so the keys' last two dimensions "
         "must be swapped: `q @ k.transpose(-2, -1)`. Without it, q @ k fails unless d_k "
         "happens to equal the number of keys, and then gives wrong numbers.")
attention_family.mistake(
    "weights_wrong_axis", dim=-2,
    name="softmax over the query axis instead of the key axis",
    hint="Each query's weights over the keys must sum to 1: softmax over the last dimension "
         "(dim=-1), not dim=-2.")
attention_family.mistake("weights_wrong_axis", alternative=1, dim=-2, fill=_FINFO_MIN)
# ... and an attention that calls that softmax without `dim`: its weights normalised the same
# way (the reference's attention passes `dim`, so the softmax's variant alone leaves it right).
for _i, _default in enumerate(_DEFAULTS):
    softmax_family.mistake("softmax_default_axis", alternative=3 + _i, default=_default)
    attention_family.mistake("softmax_default_axis", alternative=3 + _i, dim=_default)

attention_family.mistake(
    "returns_output_only", returns="output", name="attention returns only the output",
    hint="Return both tensors, in this order: `return output, weights`.")
attention_family.mistake(
    "returns_swapped", returns="swapped", name="attention returns (weights, output)",
    hint="The contract is `(output, weights)`: the output first.")


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

attention_family.mistake(
    "mask_fill_zero", fill=0.0, name="blocked scores set to 0 instead of -inf",
    hint="exp(0) = 1, so blocked positions still get weight. Fill them with `float('-inf')` "
         "(or a very negative number) before the softmax.")
attention_family.mistake(
    "mask_fill_too_small", fill=-1e4, construct=_FILL_1E4,
    name="blocked scores filled with -1e4, which large scores outweigh",
    hint="A finite fill only blocks when it is far below every real score: with scores of "
         "size 1e4 a blocked position filled with (or shifted by) -1e4 still gets weight. "
         "Use `float('-inf')`, `-1e9` or `torch.finfo(scores.dtype).min`.")
attention_family.mistake("mask_fill_too_small", alternative=1, masking="add_scaled")
attention_family.mistake(
    "mask_ignored", masking="ignore", name="the mask is never applied",
    hint="When `mask` is given, fill the blocked scores with -inf before the softmax: "
         "`scores.masked_fill(mask, float('-inf'))`.")
attention_family.mistake(
    "mask_added", masking="add_bool",
    name="the boolean mask added to the scores instead of filling them",
    hint="Adding a True/False mask adds 1 to each blocked score, which barely changes its "
         "weight. Fill the blocked scores instead: `scores.masked_fill(mask, "
         "float('-inf'))`.")
attention_family.mistake(
    "mask_after_softmax", masking="after", name="the mask is applied after the softmax",
    hint="Zeroing weights after the softmax leaves rows that no longer sum to 1. Mask the "
         "scores before the softmax.")
attention_family.mistake(
    "mask_keep_convention", masking="inverted", name="the mask read as True = keep",
    hint="In this assignment True means blocked: fill where `mask` is True, not where it is "
         "False (`masked_fill(mask, ...)`, not `masked_fill(mask == 0, ...)` or `~mask`).")
attention_family.mistake("mask_keep_convention", alternative=1, masking="inverted",
                         fill=_FINFO_MIN)


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

def _split_no_swap(ref, x, n_heads):
    *lead, T, d_model = x.shape
    return x.reshape(*lead, T, n_heads, d_model // n_heads)


def _merge_no_swap(ref, x):
    return x.reshape(*x.shape[:-2], x.shape[-2] * x.shape[-1])


mistake("split_heads_no_swap", "split_heads",
        name="split_heads stops at (..., T, n_heads, d_head): the heads are not moved before "
             "the time axis",
        hint="Reshaping is half the job: then swap T and the heads with `.transpose(-3, -2)`, "
             "so that attention runs per head over (..., n_heads, T, d_head).")(_split_no_swap)
mistake("split_heads_no_swap", "merge_heads")(_merge_no_swap)
mistake("split_heads_no_swap", "split_heads", alternative=1)(_split_no_swap)

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

@catalogue.family("multi_head_attention")
def mha_family(ref, x, params, n_heads, mask=None, context=None, *, scale=None, heads="split",
               project_out=True, sources="right", pass_mask=True, transpose_w=False,
               weights=("w_q", "w_k", "w_v")):
    """The reference multi-head attention with knobs: where queries, keys and values come
    from and with which weights, the heads, the scale, the mask, the output projection."""
    if transpose_w:
        params = {**params, **{k: params[k].T for k in ("w_q", "w_k", "w_v", "w_o")}}
    source = x if context is None else context
    q_in, kv_in = {"right": (x, source), "kv_from_x": (x, x),
                   "swapped": (source, x)}[sources]
    wq, wk, wv = (params[w] for w in weights)
    mask = mask if pass_mask else None
    if heads == "none":      # no split_heads call at all: one head over d_model
        out, _ = ref.scaled_dot_product_attention(q_in @ wq, kv_in @ wk, kv_in @ wv, mask)
        return out @ params["w_o"] if project_out else out
    n = 1 if heads == "one" else n_heads
    q, k, v = (ref.split_heads(q_in @ wq, n), ref.split_heads(kv_in @ wk, n),
               ref.split_heads(kv_in @ wv, n))
    if scale is None:
        out, _ = ref.scaled_dot_product_attention(q, k, v, mask)
    else:       # sqrt(d_model) in place of sqrt(d_head)
        w = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1])
        if mask is not None:
            w = w.masked_fill(mask, float("-inf"))
        out = ref.softmax(w, dim=-1) @ v
    out = ref.merge_heads(out)
    return out @ params["w_o"] if project_out else out


mha_family.mistake(
    "scale_by_d_model", scale="d_model",
    name="multi-head scores scaled by sqrt(d_model) instead of sqrt(d_head)",
    hint="Each head attends with vectors of size d_head = d_model // n_heads; scale by "
         "`math.sqrt(d_head)` (calling your scaled_dot_product_attention does this).")
mha_family.mistake(
    "mha_no_split", heads="one", name="multi-head attention computed as one head",
    hint="Split q, k and v into n_heads heads with split_heads, attend per head, then "
         "merge_heads.")
mha_family.mistake("mha_no_split", alternative=1, heads="none")
mha_family.mistake(
    "missing_output_projection", project_out=False, name="the output projection w_o is missing",
    hint="After merging the heads, multiply by `params['w_o']`.")
mha_family.mistake(
    "ignores_context", sources="kv_from_x", name="cross-attention ignores the context",
    hint="When `context` is given, keys and values come from it (queries still come from "
         "x).")
mha_family.mistake(
    "queries_from_context", sources="swapped",
    name="cross-attention takes queries from the context",
    hint="Queries come from x; keys and values come from `context`.")
mha_family.mistake(
    "mha_drops_mask", pass_mask=False, name="multi-head attention does not pass the mask on",
    hint="Give `mask` to scaled_dot_product_attention.")
mha_family.mistake(
    "weights_transposed", transpose_w=True, name="projections applied as x @ w.T",
    hint="The contract applies each weight as `x @ w` (no transpose).")
catalogue.describe(
    "projection_wrong_weight", name="keys or values projected with the wrong weight",
    hint="Each projection has its own weight: queries `x @ params['w_q']`, keys "
         "`source @ params['w_k']`, values `source @ params['w_v']`.")
for _i, _w in enumerate([("w_q", "w_q", "w_v"), ("w_q", "w_k", "w_k"), ("w_q", "w_k", "w_q"),
                         ("w_q", "w_v", "w_k")]):
    mha_family.mistake("projection_wrong_weight", alternative=_i, weights=_w)

# ------------------------------------------------------------------ layer norm

@catalogue.family("layer_norm")
def layer_norm_family(ref, x, gamma, beta, eps=1e-5, *, unbiased=False, eps_outside=False,
                      eps_used="given", over="last", stats_grad=True, keep_mean=True,
                      keep_var=True, sqrt=True):
    """The reference layer norm with knobs: the variance, where eps goes (and which eps: the
    one given, a fixed 1e-5, or none), the dimensions the statistics are taken over, whether
    gradients flow through them, whether the mean and the variance keep their dimension, and
    whether the square root is taken."""
    eps = {"given": eps, "fixed": 1e-5, "none": 0.0}[eps_used]
    dims = {"last": (-1,), "tokens": (-2,), "batch": (0,),
            "all": tuple(range(x.ndim))}[over]
    with torch.set_grad_enabled(stats_grad and torch.is_grad_enabled()):
        mean = x.mean(dim=dims, keepdim=True)
        var = x.var(dim=dims, keepdim=True, unbiased=True) if unbiased else \
            ((x - mean) ** 2).mean(dim=dims, keepdim=True)
        if not keep_var:
            var = var.squeeze(dims)
        if not keep_mean:
            mean = mean.squeeze(dims)
    if not sqrt:
        std = var + eps
    else:
        std = torch.sqrt(var) + eps if eps_outside else torch.sqrt(var + eps)
    return (x - mean) / std * gamma + beta


layer_norm_family.mistake(
    "unbiased_variance", unbiased=True, name="layer norm with the unbiased variance",
    hint="Layer norm divides by n, not n - 1: use `x.var(dim=-1, unbiased=False)` (or the "
         "mean of the squared deviations).")
layer_norm_family.mistake(
    "eps_outside_sqrt", eps_outside=True, name="eps added outside the square root",
    hint="Divide by `sqrt(var + eps)`, not `sqrt(var) + eps`.")
layer_norm_family.mistake(
    "layer_norm_ignores_eps", eps_used="fixed", name="layer norm ignores its eps argument",
    hint="Use the `eps` you are given, not a fixed 1e-5.")
layer_norm_family.mistake(
    "layer_norm_no_eps", eps_used="none", name="layer norm without eps",
    hint="Add eps to the variance before the square root, `torch.sqrt(var + eps)`: without it every "
         "value is slightly off, and a row whose values are (nearly) all equal divides by "
         "(nearly) zero.")
layer_norm_family.mistake(
    "layer_norm_global_stats", over="all", name="layer norm statistics over every element",
    hint="Normalise each token on its own: mean and variance over the last dimension "
         "(`dim=-1, keepdim=True`).")
layer_norm_family.mistake(
    "layer_norm_wrong_axis", over="tokens",
    name="layer norm statistics over the wrong axis (tokens or batch instead of features)",
    hint="Layer norm normalises each token's feature vector: mean and variance over the last "
         "dimension (`dim=-1, keepdim=True`), not over the tokens (dim=-2 or 1) or the batch "
         "(dim=0).")
layer_norm_family.mistake("layer_norm_wrong_axis", alternative=1, over="batch")
catalogue.describe(
    "layer_norm_no_keepdim",
    name="layer norm statistics without keepdim=True",
    hint="`x.mean(dim=-1)` and `x.var(dim=-1)` remove the last dimension, so (..., T) "
         "statistics meet (..., T, d) values along the wrong axis: each token gets another "
         "token's mean or variance (or the shapes clash). Keep the dimension: "
         "`x.mean(dim=-1, keepdim=True)`, `x.var(dim=-1, keepdim=True, unbiased=False)`.")
for _i, (_keep_mean, _keep_var) in enumerate([(True, False), (False, True), (False, False)]):
    layer_norm_family.mistake("layer_norm_no_keepdim", alternative=_i, keep_mean=_keep_mean,
                              keep_var=_keep_var)
layer_norm_family.mistake(
    "layer_norm_no_sqrt", sqrt=False,
    name="layer norm divides by the variance instead of the standard deviation",
    hint="Normalise by the standard deviation: divide x - mean by `torch.sqrt(var + eps)`, "
         "not by `var + eps`.")
layer_norm_family.mistake(
    "stats_without_grad", stats_grad=False, name="layer norm statistics computed without gradient",
    hint="The mean and variance depend on x, so gradients must flow through them: do not "
         "compute them under `torch.no_grad()` or detach them.")


# ------------------------------------------------------------------ the transformer block

_ACTIVATIONS = {"relu": torch.relu, "gelu": F.gelu,
                "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "none": lambda t: t}


@catalogue.family("transformer_block")
def block_family(ref, x, params, n_heads, mask=None, *, norm="post", ffn_norm=None,
                 act="relu", attention_residual=True, ffn_residual=True, pass_mask=True):
    """The reference block with knobs: where the norm sits (post: norm(h + f(h)); pre:
    h + f(norm(h)); after: h + norm(f(h))), around the attention and (`ffn_norm`, if not the
    same) around the feed-forward layer, each residual, the activation, the mask."""
    def sublayer(h, f, gamma, beta, residual, norm):
        ln = lambda t: ref.layer_norm(t, params[gamma], params[beta])  # noqa: E731
        if norm == "post":
            y = f(h)
            return ln(h + y if residual else y)
        y = f(ln(h)) if norm == "pre" else ln(f(h))
        return h + y if residual else y

    def attend(h):
        return ref.multi_head_attention(h, params, n_heads, mask if pass_mask else None)

    def ffn(h):
        return _ACTIVATIONS[act](h @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]

    h = sublayer(x, attend, "ln1_gamma", "ln1_beta", attention_residual, norm)
    return sublayer(h, ffn, "ln2_gamma", "ln2_beta", ffn_residual, ffn_norm or norm)


block_family.mistake(
    "pre_norm", norm="pre", name="a pre-norm block instead of post-norm",
    hint="This block is post-norm: `h = layer_norm(x + mha(x))`, then "
         "`layer_norm(h + ffn(h))`, not `x + mha(layer_norm(x))`.")
block_family.mistake(
    "mixed_norm", norm="pre", ffn_norm="post",
    name="pre-norm around one sublayer and post-norm around the other",
    hint="This block is post-norm around both sublayers: `h = layer_norm(x + mha(x))`, then "
         "`layer_norm(h + ffn(h))`; normalise after adding each residual, never before the "
         "sublayer.")
block_family.mistake("mixed_norm", alternative=1, norm="post", ffn_norm="pre")
block_family.mistake(
    "residual_after_norm", norm="after", name="the residual added after the layer norm",
    hint="Add the residual first, then normalise the sum: `layer_norm(x + mha(x))`, not "
         "`x + layer_norm(mha(x))`.")
block_family.mistake(
    "missing_ffn_residual", ffn_residual=False,
    name="no residual connection around the feed-forward layer",
    hint="Add h back before the second layer norm: `layer_norm(h + ffn(h))`.")
block_family.mistake(
    "missing_attention_residual", attention_residual=False,
    name="no residual connection around the attention",
    hint="Add x back before the first layer norm: `layer_norm(x + mha(x))`.")
block_family.mistake(
    "ffn_gelu", act="gelu", name="GELU instead of ReLU in the feed-forward layer",
    hint="This block uses ReLU: `torch.relu(h @ w1 + b1) @ w2 + b2`.")
block_family.mistake("ffn_gelu", alternative=1, act="gelu_tanh")
block_family.mistake(
    "ffn_no_activation", act="none", name="no activation in the feed-forward layer",
    hint="Apply ReLU between the two linear layers: `torch.relu(h @ w1 + b1) @ w2 + b2`.")
block_family.mistake(
    "block_drops_mask", pass_mask=False, name="the block does not pass the mask to attention",
    hint="Give `mask` to multi_head_attention inside the block.")


# ------------------------------------------------------------------ any function

catalogue.rule(
    "detached_gradient", when=gradient_cut,
    name="the gradient is cut (detach, .numpy() or .item())",
    hint="The values are right, but no gradient reaches an input. Keep every step in torch "
         "tensors: a NumPy round trip, `.detach()`, `.item()` or `torch.tensor(...)` on a "
         "result disconnects it from autograd.")

catalogue.rule(
    "numpy_round_trip", when=raised("numpy()", "requires grad"),
    name="a NumPy round trip inside the computation",
    hint="torch refuses `.numpy()` on a tensor that needs a gradient, and its advice, "
         "`.detach().numpy()`, would run but cut the gradient: no gradient would reach the "
         "inputs. Keep every step in torch: `q @ k.transpose(-2, -1)`, `torch.exp`, "
         "`x.amax(dim=-1, keepdim=True)`.")

catalogue.rule(
    "float32_cast", when=any_of(lowered_precision, mixed_precision_error, computed_in_float32),
    construct=_FLOAT32,
    name="float64 inputs converted to float32",
    hint="Keep the input's dtype: no `.float()` or `dtype=torch.float32` on the inputs (casting "
         "the result back to float64 does not bring the lost digits back); new tensors can "
         "take `dtype=x.dtype`.")

catalogue.rule(
    "float32_rounding", when=all_of(float32_rounding, not_(computed_in_float32)),
    construct=_FLOAT32,
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

# Declared, not only found by the search for several causes: once some case needs both, they
# are named on every failing case they explain (also where eps is too small to tell).
catalogue.combination(("unbiased_variance", "eps_outside_sqrt"), "layer_norm")(
    layer_norm_family.bind({"unbiased": True, "eps_outside": True}))


# ------------------------------------------------------------------ when nothing else fits
# Fallback rules: tried only when no mistake above explains a case. They read the function's
# other cases (which ranks run, which fail and how) and the failing line.

_MASKED = ["scaled_dot_product_attention", "multi_head_attention", "transformer_block"]

catalogue.fallback_rule(
    "fixed_rank", when=fixed_rank, detail=fixed_rank_detail, crashes=True,
    name="code written for one number of dimensions",
    hint="Every function must accept any number of leading dimensions, (T, d) as well as "
         "(B, T, d) or (B, H, T, d). Count dimensions from the end: `x.shape[-1]`, "
         "`k.transpose(-2, -1)`, `*lead, T, d = x.shape` (or `x.shape[:-1]`) instead of "
         "`B, T, C = x.shape`, and `x.reshape(*x.shape[:-1], n_heads, d_head)` instead of "
         "`view(B, T, H, D)`; use `@` rather than `bmm`.")

catalogue.fallback_rule(
    "mask_none_unhandled", functions=_MASKED, when=none_unhandled("mask", 3), crashes=True,
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
