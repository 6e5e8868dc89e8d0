"""Question split_heads (NumPy track): splitting the model dimension into heads, and back."""
import numpy as np
from otter.test_files import test_case

from autograder.cases import Question, array, randn, snapshot, to_numpy

OK_FORMAT = False

name = "split_heads"
points = 7

q = Question(name)


def rand(*shape, seed, dtype="float32"):
    return to_numpy(randn(*shape, seed=seed, dtype=dtype))


@test_case(name="lesson: 6 tokens, d_model 512, 8 heads round trip", points=1, hidden=False)
def lesson_round_trip(split_heads, merge_heads):
    """The lesson's x = default_rng(0).normal(size=(6, 512)): 8 slices of (6, 64), merged back exactly."""
    x = np.random.default_rng(0).normal(size=(6, 512))
    q.check("split_heads", split_heads, x, 8, expected=snapshot("lesson_split"))
    q.check_roundtrip("split_heads", split_heads, "merge_heads", merge_heads, x, 8)


@test_case(name="which features each head holds", points=1, hidden=False)
def small_split(split_heads):
    """x = arange(8) as 2 tokens of 4 features, 2 heads: head 0 holds features 0:2."""
    x = array([[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]])
    q.check("split_heads", split_heads, x, 2, expected=snapshot("small_split"))


@test_case(name="merge_heads of two heads", points=1, hidden=False)
def merge_two_heads(merge_heads):
    """Heads (2, 3, 2) back to (3, 4): token t's row holds head 0's two features, then head
    1's."""
    x = array([[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]])
    q.check("merge_heads", merge_heads, x, expected=snapshot("merge_two_heads"))


@test_case(name="lesson: the multi-head example as a batch of one sequence", points=1,
           hidden=False)
def lesson_batch_of_one(split_heads, merge_heads):
    """The lesson's X8 (3 tokens, d_model 8; rng = default_rng(0)) as a batch of one, (1, 3, 8),
    split into 2 heads of 4: (1, 2, 3, 4), and merged back to (1, 3, 8). The same functions
    serve one sequence and a batch. (Drawn, never multiplied: a product's last bits may differ
    between machines, and a public case's inputs must be the same everywhere.)"""
    x = np.random.default_rng(0).normal(size=(3, 8))[None]
    q.check("split_heads", split_heads, x, 2, expected=snapshot("lesson_batch_split"))
    heads = x.reshape(1, 3, 2, 4).transpose(0, 2, 1, 3).copy()
    q.check("merge_heads", merge_heads, heads, expected=snapshot("lesson_batch_merge"))


@test_case(name="split with batch dimensions, float32", points=1, hidden=True)
def batched_split(split_heads):
    q.check("split_heads", split_heads, rand(2, 5, 12, seed=1401), 3)


@test_case(name="merge with batch dimensions, float64", points=1, hidden=True)
def batched_merge(merge_heads):
    q.check("merge_heads", merge_heads, rand(2, 4, 3, 5, seed=1402, dtype="float64"))


@test_case(name="one head, and one feature per head", points=1, hidden=True)
def edge_heads(split_heads, merge_heads):
    x = rand(3, 6, seed=1403)
    q.check("split_heads", split_heads, x, 1)
    q.check("split_heads", split_heads, x, 6)
    q.check_roundtrip("split_heads", split_heads, "merge_heads", merge_heads, x, 6)
