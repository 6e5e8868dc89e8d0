"""Question mask: the causal mask, and attention that respects a mask."""
import torch
from otter.test_files import test_case

from autograder.cases import Question, future_mask, random_mask, randn, snapshot, tensor
from autograder.cases import rows_sum_to_one, zero_where

OK_FORMAT = False

name = "mask"
points = 8

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention",
                              "autograd.ScaledDotProductFlashAttentionForCpuBackward0"],
             shape_hint="the scores are (..., Tq, Tk) and Tq != Tk in some cases; the mask "
                        "broadcasts against them")
weights_sum = rows_sum_to_one(item=1)


@test_case(name="lesson: causal_mask(3)", points=1, hidden=False)
def lesson_mask(causal_mask):
    """True above the diagonal: [[F, T, T], [F, F, T], [F, F, F]]."""
    q.check("causal_mask", causal_mask, 3, expected=snapshot("causal_mask_3"), grad=False)


@test_case(name="lesson: causally masked weights", points=1, hidden=False)
def lesson_masked_weights(scaled_dot_product_attention):
    """The lesson's masked weights: [[1, 0, 0], [0.33, 0.67, 0], [0.248, 0.248, 0.503]]."""
    x = tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype="float64")
    mask = future_mask(3)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x, mask=mask,
            expected=snapshot("lesson_masked_weights"), props=[weights_sum, zero_where(mask, 1)])


@test_case(name="masked scores of size 1e4, float64", points=1, hidden=False)
def masked_scores_1e4(scaled_dot_product_attention):
    """Query 0 may attend only to key 0, with a score near -1.6e4: its blocked positions must
    still get no weight, so a fill of -1e4 is not low enough (-inf, -1e9 or finfo.min are)."""
    qs = tensor([[150.0, 0.0], [0.0, 150.0], [150.0, 150.0]], dtype="float64")
    ks = tensor([[-150.0, 0.0], [0.0, 150.0], [150.0, 0.0]], dtype="float64")
    vs = tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype="float64")
    mask = future_mask(3)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            expected=snapshot("masked_scores_1e4"), props=[weights_sum, zero_where(mask, 1)],
            large_inputs=True)


@test_case(name="lesson: PyTorch's causal check, batch 1, 2 heads, 3 tokens", points=1,
           hidden=False)
def lesson_causal_heads(scaled_dot_product_attention):
    """The lesson's PyTorch check with `is_causal=True`: its 4-D q, k and v (a generator seeded
    0, then three (1, 2, 3, 4) draws) under the (3, 3) causal mask, which broadcasts over the
    batch and the heads. Drawn in float64 and rounded to float32, so that the inputs are the
    same on every machine (torch's float32 draw uses the CPU's vector instructions)."""
    g = torch.Generator().manual_seed(0)
    qs, ks, vs = (torch.randn(1, 2, 3, 4, generator=g, dtype=torch.float64).float()
                  for _ in range(3))
    mask = future_mask(3)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            expected=snapshot("lesson_causal_heads"), props=[weights_sum, zero_where(mask, 1)])


@test_case(name="causal_mask of other sizes", points=1, hidden=True)
def other_sizes(causal_mask):
    q.check("causal_mask", causal_mask, 1, grad=False)
    q.check("causal_mask", causal_mask, 7, grad=False)


@test_case(name="causal mask broadcast over batch and heads, float64", points=1, hidden=True)
def broadcast_causal(scaled_dot_product_attention):
    qs, ks, vs = (randn(2, 3, 5, 4, seed=s, dtype="float64") for s in (301, 302, 303))
    mask = future_mask(5)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], seed=8)


@test_case(name="padding mask with Tq != Tk", points=1, hidden=True)
def padding_mask(scaled_dot_product_attention):
    qs, ks, vs = randn(2, 3, 4, seed=304), randn(2, 6, 4, seed=305), randn(2, 6, 3, seed=306)
    mask = random_mask(2, 1, 6, seed=307, p=0.4)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], seed=9)


@test_case(name="masked large scores (also scores of size 1e4, float64)", points=1, hidden=True)
def masked_large(scaled_dot_product_attention):
    """A finite fill such as -1e4 (old tutorials' additive masks) is not far enough below
    scores of that size: blocked positions get weight. -inf, -1e9 or finfo.min are."""
    qs, ks = randn(1, 6, 8, seed=308, scale=30.0), randn(1, 6, 8, seed=309, scale=30.0)
    vs = randn(1, 6, 8, seed=310)
    mask = future_mask(6)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], seed=10, large_inputs=True)
    qs, ks = (randn(2, 6, 8, seed=s, scale=100.0, dtype="float64") for s in (320, 321))
    vs = randn(2, 6, 8, seed=322, dtype="float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], seed=11, large_inputs=True)
