"""Question softmax: a numerically stable softmax along any dimension."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor
from autograder.cases import rows_sum_to_one

OK_FORMAT = False

name = "softmax"
points = 7

q = Question(name, forbidden=["torch.softmax", "torch.nn.functional.softmax",
                              "torch.Tensor.softmax", "torch.special.softmax",
                              "autograd.SoftmaxBackward0",
                              "autograd.SafeSoftmaxBackward0"],
             # Logits are exponents: a logit near 1e4 is only known to about 1e-3 in float32,
             # so probabilities made from it are only known to that relative precision.
             input_precision="exponent")


@test_case(name="lesson: softmax([1, 2, 3])", points=1, hidden=False)
def lesson_small(softmax):
    """The lesson's soft blend: [0.09, 0.245, 0.665]."""
    q.check("softmax", softmax, tensor([1.0, 2.0, 3.0]), expected=snapshot("lesson_small"),
            props=[rows_sum_to_one(name="probabilities")])


@test_case(name="lesson: softmax([10, 20, 30])", points=1, hidden=False)
def lesson_large(softmax):
    """The lesson's hard choice: [0, 0, 1] to three decimals."""
    q.check("softmax", softmax, tensor([10.0, 20.0, 30.0]), expected=snapshot("lesson_large"),
            props=[rows_sum_to_one(name="probabilities")])


@test_case(name="rows of a score table", points=1, hidden=False)
def score_rows(softmax):
    """Each row of a (3, 3) table becomes weights summing to 1 (the lesson's scores)."""
    scores = tensor([[0.707, 0.0, 0.707], [0.0, 0.707, 0.707], [0.707, 0.707, 1.414]])
    q.check("softmax", softmax, scores, expected=snapshot("score_rows"),
            props=[rows_sum_to_one(name="probabilities")])


@test_case(name="along dim=0 of a 3-D input, logits of very different sizes", points=1,
           hidden=False)
def columns_far_apart(softmax):
    """x[:, i, j] are four softmaxes of three logits each: [1000, 1001, 1002], the lesson's
    [1, 2, 3] and [10, 20, 30], and [-1, 0, 1]. Subtracting each one's own maximum along
    dim=0 keeps them all finite."""
    x = tensor([[[1000.0, 1.0], [10.0, -1.0]], [[1001.0, 2.0], [20.0, 0.0]],
               [[1002.0, 3.0], [30.0, 1.0]]])
    q.check("softmax", softmax, x, dim=0, expected=snapshot("columns_far_apart"),
            props=[rows_sum_to_one(dim=0, name="probabilities")], large_inputs=True)


@test_case(name="float64 with batch dimensions", points=1, hidden=True)
def batched_float64(softmax):
    q.check("softmax", softmax, randn(2, 3, 4, 5, seed=101, dtype="float64"),
            props=[rows_sum_to_one(name="probabilities")], seed=1)


@test_case(name="along other dimensions (dim=1, dim=0, dim=-2 of a 4-D input)", points=1,
           hidden=True)
def other_dim(softmax):
    """A softmax hard-coded to one axis passes one `dim` by chance, not three."""
    q.check("softmax", softmax, randn(3, 4, 5, seed=102), dim=1,
            props=[rows_sum_to_one(dim=1, name="probabilities")], seed=2)
    q.check("softmax", softmax, randn(3, 4, 5, seed=104), dim=0,
            props=[rows_sum_to_one(dim=0, name="probabilities")], seed=4)
    q.check("softmax", softmax, randn(2, 3, 4, 5, seed=105), dim=-2,
            props=[rows_sum_to_one(dim=-2, name="probabilities")], seed=5)


@test_case(name="large logits, rows of different scales", points=1, hidden=True)
def large_logits(softmax):
    x = randn(2, 4, 6, seed=103, scale=50.0)
    x[0] += 1e4
    x[1] -= 1e4
    q.check("softmax", softmax, x, props=[rows_sum_to_one(name="probabilities")], seed=3,
            large_inputs=True)
