"""Question adam: dicts in, a dict and a dataclass of dicts and an int out."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot

OK_FORMAT = False

name = "adam"
points = 3

q = Question(name)


def problem(seed, t, dtype="float32"):
    params = {"w": randn(3, 2, seed=seed, dtype=dtype), "b": randn(2, seed=seed + 1, dtype=dtype)}
    grads = {k: randn(*v.shape, seed=seed + 10 + i, dtype=dtype)
             for i, (k, v) in enumerate(params.items())}
    state = {"m": {k: randn(*v.shape, seed=seed + 20 + i, dtype=dtype, scale=0.1 * (t > 0))
                   for i, (k, v) in enumerate(params.items())},
             "v": {k: randn(*v.shape, seed=seed + 30 + i, dtype=dtype, scale=0.1 * (t > 0)) ** 2
                   for i, (k, v) in enumerate(params.items())},
             "t": t}
    return params, grads, state


@test_case(name="the first step", points=1, hidden=False)
def first(adam_step):
    """From zero moments: every parameter moves by about lr against the sign of its gradient."""
    params, grads, state = problem(1, 0)
    q.check("adam_step", adam_step, params, grads, state, grad=False,
            expected=snapshot("first"))


@test_case(name="a later step, float64", points=1, hidden=True)
def later(adam_step):
    params, grads, state = problem(2, 3, "float64")
    q.check("adam_step", adam_step, params, grads, state, lr=0.1, grad=False)


@test_case(name="another later step", points=1, hidden=True)
def another(adam_step):
    params, grads, state = problem(3, 7)
    q.check("adam_step", adam_step, params, grads, state, grad=False)
