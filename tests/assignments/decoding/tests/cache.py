"""Question cache: one decoding step that returns (output, a dict of keys and values, None)."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot

OK_FORMAT = False

name = "cache"
points = 4

q = Question(name)


def weights(d, seed, dtype="float32"):
    return {n: randn(d, d, seed=seed + i, dtype=dtype, scale=d ** -0.5)
            for i, n in enumerate("qkv")}


@test_case(name="one step on a cache of two, float64", points=1, hidden=False)
def small(kv_step):
    """A token of size 3 attends over the two cached positions and itself."""
    x = randn(1, 3, seed=1, dtype="float64")
    cache = {"k": randn(2, 3, seed=2, dtype="float64"), "v": randn(2, 3, seed=3, dtype="float64")}
    q.check("kv_step", kv_step, x, cache, weights(3, 10, "float64"), expected=snapshot("small"))


@test_case(name="the weights when asked for", points=1, hidden=False)
def with_weights(kv_step):
    x = randn(1, 4, seed=4)
    cache = {"k": randn(3, 4, seed=5), "v": randn(3, 4, seed=6)}
    q.check("kv_step", kv_step, x, cache, weights(4, 20), return_weights=True,
            expected=snapshot("with_weights"))


@test_case(name="batch and heads", points=1, hidden=True)
def batched(kv_step):
    x = randn(2, 3, 1, 4, seed=7)
    cache = {"k": randn(2, 3, 5, 4, seed=8), "v": randn(2, 3, 5, 4, seed=9)}
    q.check("kv_step", kv_step, x, cache, weights(4, 30), seed=1)


@test_case(name="float64, an empty cache", points=1, hidden=True)
def empty(kv_step):
    x = randn(2, 1, 5, seed=10, dtype="float64")
    cache = {"k": randn(2, 0, 5, seed=11, dtype="float64"),
             "v": randn(2, 0, 5, seed=12, dtype="float64")}
    q.check("kv_step", kv_step, x, cache, weights(5, 40, "float64"), return_weights=True,
            seed=2)
