"""Question attention: scaled dot-product attention, softmax(q k^T / sqrt(d_k)) v."""
import torch
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor
from autograder.cases import rows_sum_to_one

OK_FORMAT = False

name = "attention"
points = 8

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention",
                              "torch.nn.functional.multi_head_attention_forward",
                              "autograd.ScaledDotProductFlashAttentionForCpuBackward0"],
             shape_hint="the scores are (..., Tq, Tk) and Tq != Tk in some cases: "
                        "q @ (k with its last two dimensions swapped), then weights @ v")
weights_sum = rows_sum_to_one(item=1)


@test_case(name="lesson: three tokens, Q = K = V = X", points=1, hidden=False)
def lesson_three_tokens(scaled_dot_product_attention):
    """The lesson's worked example: weights [[0.401, 0.198, 0.401], ...], output [[0.802, 0.599], ...]."""
    x = tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype="float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x,
            expected=snapshot("lesson_three_tokens"), props=[weights_sum])


@test_case(name="lesson: red, block, box", points=1, hidden=False)
def lesson_red_block_box(scaled_dot_product_attention):
    """Four-number token vectors; the weights' first row is [0.51, 0.31, 0.19]."""
    x = tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, x, x, x,
            expected=snapshot("lesson_red_block_box"), props=[weights_sum])


@test_case(name="queries, keys and values of their own; d_v != d_k", points=1, hidden=False)
def own_queries_keys_values(scaled_dot_product_attention):
    """Two queries over three keys of size 4, whose values have size 2: the weights are
    (2, 3) and the output (2, 2)."""
    qs = tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0]])
    ks = tensor([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [2.0, 0.0, 0.0, 1.0]])
    vs = tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            expected=snapshot("own_queries_keys_values"), props=[weights_sum])


def lesson_heads():
    """The lesson's PyTorch check: from a generator seeded 0, q, k and v drawn in that order,
    each (batch 1, heads 2, tokens 3, d_head 4). Drawn in float64 and rounded to float32:
    torch's float32 draw uses vector instructions where the CPU has them, so its last bits
    differ between machines, and a public case's inputs must be the same everywhere."""
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, 2, 3, 4, generator=g, dtype=torch.float64).float()
                 for _ in range(3))


@test_case(name="lesson: PyTorch's check, batch 1, 2 heads, 3 tokens, d_head 4", points=1,
           hidden=False)
def lesson_batch_heads(scaled_dot_product_attention):
    """The lesson compares a hand-written attention with PyTorch's on 4-D tensors: the same
    function must serve (T, d) and (batch, heads, T, d) alike; weights (1, 2, 3, 3)."""
    qs, ks, vs = lesson_heads()
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            expected=snapshot("lesson_batch_heads"), props=[weights_sum])


@test_case(name="batch and heads, d_k != T", points=1, hidden=True)
def batch_heads(scaled_dot_product_attention):
    qs, ks, vs = (randn(2, 3, 4, 5, seed=s) for s in (201, 202, 203))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum], seed=4)


@test_case(name="Tq != Tk and d_v != d_k, float64", points=1, hidden=True)
def cross_shapes(scaled_dot_product_attention):
    qs = randn(2, 3, 8, seed=204, dtype="float64")
    ks = randn(2, 6, 8, seed=205, dtype="float64")
    vs = randn(2, 6, 5, seed=206, dtype="float64")
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum], seed=5)


@test_case(name="larger d_k, where the scale matters", points=1, hidden=True)
def wide_keys(scaled_dot_product_attention):
    qs, ks, vs = (randn(4, 6, 64, seed=s) for s in (207, 208, 209))
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum], seed=6)


@test_case(name="large scores", points=1, hidden=True)
def large_scores(scaled_dot_product_attention):
    qs, ks = randn(2, 5, 4, seed=210, scale=60.0), randn(2, 5, 4, seed=211, scale=60.0)
    vs = randn(2, 5, 3, seed=212)
    q.check("scaled_dot_product_attention", scaled_dot_product_attention, qs, ks, vs,
            props=[weights_sum], seed=7, large_inputs=True)
