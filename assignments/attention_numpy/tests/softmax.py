"""Question softmax (NumPy track): a numerically stable softmax along any axis."""
from otter.test_files import test_case

from autograder.cases import Question, array, randn, snapshot, to_numpy
from autograder.cases import rows_sum_to_one

OK_FORMAT = False

name = "softmax"
points = 7

# The library shortcuts: SciPy's, and torch's for a student who converts to tensors and back.
q = Question(name, forbidden=["scipy.special.softmax", "scipy.special.log_softmax",
                              "torch.softmax", "torch.nn.functional.softmax",
                              "torch.Tensor.softmax", "torch.special.softmax"],
             # Logits are exponents: a logit near 1e4 is only known to about 1e-3 in float32,
             # so probabilities made from it are only known to that relative precision.
             input_precision="exponent")
probabilities = rows_sum_to_one(name="probabilities")


@test_case(name="lesson: softmax([1, 2, 3])", points=1, hidden=False)
def lesson_small(softmax):
    """The lesson's soft blend: [0.09, 0.245, 0.665]."""
    q.check("softmax", softmax, array([1.0, 2.0, 3.0], "float64"),
            expected=snapshot("lesson_small"), props=[probabilities])


@test_case(name="lesson: softmax([10, 20, 30])", points=1, hidden=False)
def lesson_large(softmax):
    """The lesson's hard choice: [0, 0, 1] to three decimals."""
    q.check("softmax", softmax, array([10.0, 20.0, 30.0], "float64"),
            expected=snapshot("lesson_large"), props=[probabilities])


@test_case(name="rows of a score table, float32", points=1, hidden=False)
def score_rows(softmax):
    """Each row of the lesson's (3, 3) score table becomes weights summing to 1, in float32."""
    scores = array([[0.707, 0.0, 0.707], [0.0, 0.707, 0.707], [0.707, 0.707, 1.414]])
    q.check("softmax", softmax, scores, expected=snapshot("score_rows"), props=[probabilities])


@test_case(name="along axis=0 of a 3-D input, logits of very different sizes", points=1,
           hidden=False)
def columns_far_apart(softmax):
    """x[:, i, j] are four softmaxes of three logits each: [1000, 1001, 1002], the lesson's
    [1, 2, 3] and [10, 20, 30], and [-1, 0, 1]. Subtracting each one's own maximum along
    axis=0 keeps them all finite."""
    x = array([[[1000.0, 1.0], [10.0, -1.0]], [[1001.0, 2.0], [20.0, 0.0]],
             [[1002.0, 3.0], [30.0, 1.0]]])
    q.check("softmax", softmax, x, axis=0, expected=snapshot("columns_far_apart"),
            props=[rows_sum_to_one(dim=0, name="probabilities")], large_inputs=True)


@test_case(name="float32 with batch dimensions", points=1, hidden=True)
def batched(softmax):
    q.check("softmax", softmax, to_numpy(randn(2, 3, 4, 5, seed=1101)), props=[probabilities])


@test_case(name="along other axes (axis=1, axis=0, axis=-2 of a 4-D input), float64", points=1,
           hidden=True)
def other_axis(softmax):
    """A softmax hard-coded to one axis passes one `axis` by chance, not three."""
    q.check("softmax", softmax, to_numpy(randn(3, 4, 5, seed=1102, dtype="float64")), axis=1,
            props=[rows_sum_to_one(dim=1, name="probabilities")])
    q.check("softmax", softmax, to_numpy(randn(3, 4, 5, seed=1104, dtype="float64")), axis=0,
            props=[rows_sum_to_one(dim=0, name="probabilities")])
    q.check("softmax", softmax, to_numpy(randn(2, 3, 4, 5, seed=1105, dtype="float64")),
            axis=-2, props=[rows_sum_to_one(dim=-2, name="probabilities")])


@test_case(name="large logits, rows of different scales", points=1, hidden=True)
def large_logits(softmax):
    x = to_numpy(randn(2, 4, 6, seed=1103, scale=50.0))
    x[0] += 1e4
    x[1] -= 1e4
    q.check("softmax", softmax, x, props=[probabilities], large_inputs=True)
