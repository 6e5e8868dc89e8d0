"""Question mask (NumPy track): the causal mask, and attention that respects a mask."""
import numpy as np
from otter.test_files import test_case

from autograder.cases import (Question, array, future_mask, random_mask, randn, snapshot,
                              to_numpy)
from autograder.cases import rows_sum_to_one, zero_where

OK_FORMAT = False

name = "mask"
points = 8

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention"],
             shape_hint="the scores are (..., Tq, Tk) and Tq != Tk in some cases; the mask "
                        "broadcasts against them")
weights_sum = rows_sum_to_one(item=1)


def rand(*shape, seed, dtype="float32", scale=1.0):
    return to_numpy(randn(*shape, seed=seed, dtype=dtype, scale=scale))


@test_case(name="lesson: causal_mask(3)", points=1, hidden=False)
def lesson_mask(causal_mask):
    """True above the diagonal: [[F, T, T], [F, F, T], [F, F, F]]."""
    q.check("causal_mask", causal_mask, 3, expected=snapshot("causal_mask_3"))


@test_case(name="lesson: causally masked weights", points=1, hidden=False)
def lesson_masked_weights(scaled_dot_product_attention):
    """The lesson's masked weights: [[1, 0, 0], [0.33, 0.67, 0], [0.248, 0.248, 0.503]]."""
    x = array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "float64")
    mask = to_numpy(future_mask(3))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x, mask=mask,
            expected=snapshot("lesson_masked_weights"),
            props=[weights_sum, zero_where(mask, 1)])


@test_case(name="masked scores of size 1e4, float64", points=1, hidden=False)
def masked_scores_1e4(scaled_dot_product_attention):
    """Query 0 may attend only to key 0, with a score near -1.6e4: its blocked positions must
    still get no weight, so a fill of -1e4 is not low enough (-inf, -1e9 or finfo.min are)."""
    qs = array([[150.0, 0.0], [0.0, 150.0], [150.0, 150.0]], "float64")
    ks = array([[-150.0, 0.0], [0.0, 150.0], [150.0, 0.0]], "float64")
    vs = array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "float64")
    mask = to_numpy(future_mask(3))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            expected=snapshot("masked_scores_1e4"), props=[weights_sum, zero_where(mask, 1)],
            large_inputs=True)


def lesson_heads():
    """The lesson's multi-head example, X8 = default_rng(0).normal(size=(3, 8)), split into its
    2 heads of 4 the lesson's way, (2, 3, 4), with identity projections as in the lesson's first
    example (Q = K = V). Drawn, never multiplied: a product's last bits may differ between
    machines, and a public case's inputs must be the same everywhere."""
    x8 = np.random.default_rng(0).normal(size=(3, 8))
    heads = x8.reshape(3, 2, 4).transpose(1, 0, 2).copy()
    return heads, heads, heads


@test_case(name="lesson: the two heads of the multi-head example, causally masked", points=1,
           hidden=False)
def lesson_two_heads_causal(scaled_dot_product_attention):
    """The lesson's two heads (2, 3, 4), Q = K = V, under its (3, 3) causal mask, which
    broadcasts over the heads: each head's weights are lower-triangular."""
    qs, ks, vs = lesson_heads()
    mask = to_numpy(future_mask(3))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            expected=snapshot("lesson_two_heads_causal"),
            props=[weights_sum, zero_where(mask, 1)])


@test_case(name="causal_mask of other sizes", points=1, hidden=True)
def other_sizes(causal_mask):
    q.check("causal_mask", causal_mask, 1)
    q.check("causal_mask", causal_mask, 7)


@test_case(name="causal mask broadcast over batch and heads, float64", points=1, hidden=True)
def broadcast_causal(scaled_dot_product_attention):
    qs, ks, vs = (rand(2, 3, 5, 4, seed=s, dtype="float64") for s in (1301, 1302, 1303))
    mask = to_numpy(future_mask(5))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)])


@test_case(name="padding mask with Tq != Tk", points=1, hidden=True)
def padding_mask(scaled_dot_product_attention):
    qs, ks, vs = rand(2, 3, 4, seed=1304), rand(2, 6, 4, seed=1305), rand(2, 6, 3, seed=1306)
    mask = to_numpy(random_mask(2, 1, 6, seed=1307, p=0.4))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)])


@test_case(name="masked large scores (also scores of size 1e4, float64)", points=1, hidden=True)
def masked_large(scaled_dot_product_attention):
    """A finite fill such as -1e4 (old tutorials' additive masks) is not far enough below
    scores of that size: blocked positions get weight. -inf, -1e9 or finfo.min are."""
    qs, ks = rand(1, 6, 8, seed=1308, scale=30.0), rand(1, 6, 8, seed=1309, scale=30.0)
    vs = rand(1, 6, 8, seed=1310)
    mask = to_numpy(future_mask(6))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], large_inputs=True)
    qs, ks = (rand(2, 6, 8, seed=s, scale=100.0, dtype="float64") for s in (1311, 1312))
    vs = rand(2, 6, 8, seed=1313, dtype="float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs, mask=mask,
            props=[weights_sum, zero_where(mask, 1)], large_inputs=True)
