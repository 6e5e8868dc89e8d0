"""Question multi_head (NumPy track): multi-head self- and cross-attention, output projection."""
import numpy as np
from otter.test_files import test_case

from autograder.cases import Question, attention_params, future_mask, randn, snapshot, to_numpy

OK_FORMAT = False

name = "multi_head"
points = 8

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention",
                              "torch.nn.functional.multi_head_attention_forward"],
             shape_hint="keys and values come from `context` when it is given, and its "
                        "length may differ from x's; x may have several leading dimensions")


def rand(*shape, seed, dtype="float32"):
    return to_numpy(randn(*shape, seed=seed, dtype=dtype))


def lesson_inputs():
    """The lesson's numbers: rng = default_rng(0); X8, Wq, Wk, Wv drawn in order (then Wo)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 8))
    ws = [rng.normal(size=(8, 8)) for _ in range(4)]
    return x, dict(zip(["w_q", "w_k", "w_v", "w_o"], ws))


@test_case(name="lesson: 3 tokens, d_model 8, 2 heads", points=1, hidden=False)
def lesson_two_heads(multi_head_attention):
    """The lesson's example with an output projection: the result is (3, 8) like x."""
    x, params = lesson_inputs()
    q.check("multi_head_attention", multi_head_attention, x, params, 2,
            expected=snapshot("lesson_two_heads"))


@test_case(name="lesson example with a causal mask", points=1, hidden=False)
def lesson_causal(multi_head_attention):
    x, params = lesson_inputs()
    q.check("multi_head_attention", multi_head_attention, x, params, 2,
            mask=to_numpy(future_mask(3)), expected=snapshot("lesson_causal"))


@test_case(name="lesson: action queries read image tokens (cross-attention)", points=1,
           hidden=False)
def lesson_cross_attention(multi_head_attention):
    """Two action tokens (the queries, from x) attend over four image tokens (keys and values
    come from `context`): one output row per action token, (2, 8)."""
    x, context = rand(2, 8, seed=1460), rand(4, 8, seed=1461)
    q.check("multi_head_attention", multi_head_attention, x,
            to_numpy(attention_params(8, seed=1462)), 2, context=context,
            expected=snapshot("lesson_cross_attention"))


@test_case(name="lesson example as a batch of one sequence", points=1, hidden=False)
def lesson_batch_of_one(multi_head_attention):
    """The lesson's 3 tokens as a batch of one, x of shape (1, 3, 8): the same result as the
    first case, with the batch dimension kept, (1, 3, 8)."""
    x, params = lesson_inputs()
    q.check("multi_head_attention", multi_head_attention, x[None], params, 2,
            expected=snapshot("lesson_batch_of_one"))


@test_case(name="batch, 4 heads of size 2, causal mask, float64", points=1, hidden=True)
def small_heads(multi_head_attention):
    x = rand(2, 5, 8, seed=1501, dtype="float64")
    q.check("multi_head_attention", multi_head_attention, x,
            to_numpy(attention_params(8, seed=1502, dtype="float64")), 4,
            mask=to_numpy(future_mask(5)))


@test_case(name="cross-attention from a longer context", points=1, hidden=True)
def cross_attention(multi_head_attention):
    x, context = rand(2, 3, 12, seed=1503), rand(2, 7, 12, seed=1504)
    q.check("multi_head_attention", multi_head_attention, x,
            to_numpy(attention_params(12, seed=1505)), 3, context=context)


@test_case(name="a single head; extra leading dimensions (4-D x)", points=1, hidden=True)
def one_head(multi_head_attention):
    """The contract's `(..., T, d_model)`: code that unpacks `B, T, D = x.shape` fails on 4-D
    (one head, no mask: this case tests the leading dimensions, not the heads or the mask)."""
    q.check("multi_head_attention", multi_head_attention, rand(4, 6, seed=1506),
            to_numpy(attention_params(6, seed=1507)), 1)
    q.check("multi_head_attention", multi_head_attention, rand(2, 3, 5, 8, seed=1510),
            to_numpy(attention_params(8, seed=1511)), 1)


@test_case(name="many heads with a padding mask, float64", points=1, hidden=True)
def many_heads(multi_head_attention):
    x = rand(3, 4, 16, seed=1508, dtype="float64")
    mask = np.zeros((3, 1, 1, 4), dtype=bool)
    mask[0, ..., 3] = True
    mask[2, ..., 2:] = True
    q.check("multi_head_attention", multi_head_attention, x,
            to_numpy(attention_params(16, seed=1509, dtype="float64")), 8, mask=mask)
