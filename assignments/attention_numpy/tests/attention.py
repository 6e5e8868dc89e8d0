"""Question attention (NumPy track): scaled dot-product attention, softmax(q k^T / sqrt(d_k)) v."""
import numpy as np
from otter.test_files import test_case

from autograder.cases import Question, array, randn, snapshot, to_numpy
from autograder.cases import rows_sum_to_one

OK_FORMAT = False

name = "attention"
points = 8

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention",
                              "torch.nn.functional.multi_head_attention_forward"],
             shape_hint="the scores are (..., Tq, Tk) and Tq != Tk in some cases: "
                        "q @ (k with its last two dimensions swapped), then weights @ v")
weights_sum = rows_sum_to_one(item=1)


def rand(*shape, seed, dtype="float32", scale=1.0):
    return to_numpy(randn(*shape, seed=seed, dtype=dtype, scale=scale))


@test_case(name="lesson: three tokens, Q = K = V = X", points=1, hidden=False)
def lesson_three_tokens(scaled_dot_product_attention):
    """The lesson's worked example: weights [[0.401, 0.198, 0.401], ...], output [[0.802, 0.599], ...]."""
    x = array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x,
            expected=snapshot("lesson_three_tokens"), props=[weights_sum])


@test_case(name="lesson: red, block, box", points=1, hidden=False)
def lesson_red_block_box(scaled_dot_product_attention):
    """Four-number token vectors; the weights are [[0.51, 0.31, 0.19], [0.31, 0.51, 0.19], [0.27, 0.27, 0.45]]."""
    x = array([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]], "float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x,
            expected=snapshot("lesson_red_block_box"), props=[weights_sum])


@test_case(name="queries, keys and values of their own; d_v != d_k", points=1, hidden=False)
def own_queries_keys_values(scaled_dot_product_attention):
    """Two queries over three keys of size 4, whose values have size 2: the weights are
    (2, 3) and the output (2, 2)."""
    qs = array([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
    ks = array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [2.0, 0.0, 0.0, 1.0]])
    vs = array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            expected=snapshot("own_queries_keys_values"), props=[weights_sum])


def lesson_heads():
    """The lesson's multi-head example, X8 = default_rng(0).normal(size=(3, 8)), split into its
    2 heads of 4 the lesson's way, (2, 3, 4), with identity projections as in the lesson's first
    example (Q = K = V). Drawn, never multiplied: a product's last bits may differ between
    machines, and a public case's inputs must be the same everywhere."""
    x8 = np.random.default_rng(0).normal(size=(3, 8))
    heads = x8.reshape(3, 2, 4).transpose(1, 0, 2).copy()
    return heads, heads, heads


@test_case(name="lesson: the two heads of the multi-head example, Q = K = V, (2, 3, 4)", points=1,
           hidden=False)
def lesson_two_heads(scaled_dot_product_attention):
    """The lesson runs attention on its heads at once: weights (2, 3, 3), one table per head.
    The same function serves one (T, d) sequence and a stack of them."""
    qs, ks, vs = lesson_heads()
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            expected=snapshot("lesson_two_heads"), props=[weights_sum])


@test_case(name="batch and heads, d_k != T, float32", points=1, hidden=True)
def batch_heads(scaled_dot_product_attention):
    qs, ks, vs = (rand(2, 3, 4, 5, seed=s) for s in (1201, 1202, 1203))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum])


@test_case(name="Tq != Tk and d_v != d_k, float64", points=1, hidden=True)
def cross_shapes(scaled_dot_product_attention):
    qs = rand(2, 3, 8, seed=1204, dtype="float64")
    ks = rand(2, 6, 8, seed=1205, dtype="float64")
    vs = rand(2, 6, 5, seed=1206, dtype="float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum])


@test_case(name="larger d_k, where the scale matters", points=1, hidden=True)
def wide_keys(scaled_dot_product_attention):
    qs, ks, vs = (rand(4, 6, 64, seed=s) for s in (1207, 1208, 1209))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum])


@test_case(name="large scores", points=1, hidden=True)
def large_scores(scaled_dot_product_attention):
    qs, ks = rand(2, 5, 4, seed=1210, scale=60.0), rand(2, 5, 4, seed=1211, scale=60.0)
    vs = rand(2, 5, 3, seed=1212)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum], large_inputs=True)
