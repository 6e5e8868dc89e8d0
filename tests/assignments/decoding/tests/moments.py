"""Question moments: a namedtuple of two tensors."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor

OK_FORMAT = False

name = "moments"
points = 2

q = Question(name)


@test_case(name="moments of two rows", points=1, hidden=False)
def rows(moments):
    """Rows [1, 2, 3, 4] and [2, 2, 2, 2]: means 2.5 and 2, variances 1.25 and 0."""
    q.check("moments", moments, tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]),
            expected=snapshot("rows"))


@test_case(name="float64 with batch dimensions", points=1, hidden=True)
def batched(moments):
    q.check("moments", moments, randn(2, 3, 6, seed=1, dtype="float64"), seed=3)
