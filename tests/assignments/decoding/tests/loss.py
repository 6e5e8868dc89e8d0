"""Question loss: a Python float and a tensor; a NumPy scalar and an array."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor, to_numpy

OK_FORMAT = False

name = "loss"
points = 4

# The loss is a Python float (a float64) computed in float32: compared within float32's slack.
q = Question(name, tolerance={"loss": {"float64": (1e-5, 1e-6)}})


@test_case(name="three samples of four classes", points=1, hidden=False)
def small(cross_entropy):
    logits = randn(3, 4, seed=1, scale=2.0)
    q.check("cross_entropy", cross_entropy, logits, tensor([0, 3, 1], dtype="int64"),
            grad=False, expected=snapshot("small"))


@test_case(name="eight samples of ten classes", points=1, hidden=True)
def larger(cross_entropy):
    logits = randn(8, 10, seed=2, scale=3.0)
    q.check("cross_entropy", cross_entropy, logits,
            tensor([1, 0, 9, 4, 4, 2, 7, 3], dtype="int64"), grad=False)


@test_case(name="NumPy, float64", points=1, hidden=False)
def numpy_small(np_cross_entropy):
    logits = to_numpy(randn(3, 4, seed=3, scale=2.0, dtype="float64"))
    q.check("np_cross_entropy", np_cross_entropy, logits, to_numpy(tensor([2, 0, 1],
                                                                             dtype="int64")),
            expected=snapshot("numpy_small"))


@test_case(name="NumPy, float32", points=1, hidden=True)
def numpy_float32(np_cross_entropy):
    """The gradient's target entries cancel (p - 1): this case allows it more absolute slack."""
    logits = to_numpy(randn(6, 5, seed=4, scale=4.0))
    q.check("np_cross_entropy", np_cross_entropy, logits,
            to_numpy(tensor([4, 0, 1, 1, 3, 2], dtype="int64")),
            tolerance={"dlogits": {"float32": (1e-4, 1e-6)}, "loss": {"float32": (1e-5, 1e-6)}})
