"""Question backward: a forward pass with a cache of the student's own design, and the
backward pass fed that very cache."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot

OK_FORMAT = False

name = "backward"
points = 3

q = Question(name)


@test_case(name="the forward pass", points=1, hidden=False)
def forward(norm_forward):
    """Only y is compared (and the gradient through it): the cache is yours."""
    q.check("norm_forward", norm_forward, randn(2, 5, seed=1), part="y",
            expected=snapshot("forward"))


@test_case(name="the backward pass on your forward's cache", points=1, hidden=False)
def backward(norm_forward, norm_backward):
    """dy is given; the cache comes from your own norm_forward on the same x."""
    x = randn(2, 5, seed=2)
    q.check("norm_backward", norm_backward, randn(2, 5, seed=3),
            q.output_of("norm_forward", norm_forward, x, part="cache"), grad=False,
            expected=snapshot("backward"))


@test_case(name="backward with batch dimensions, float64", points=1, hidden=True)
def batched(norm_forward, norm_backward):
    x = randn(2, 3, 7, seed=4, dtype="float64")
    q.check("norm_backward", norm_backward, randn(2, 3, 7, seed=5, dtype="float64"),
            q.output_of("norm_forward", norm_forward, x, part="cache"), grad=False)
