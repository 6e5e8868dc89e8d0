"""Question split_heads: splitting the model dimension into heads, and merging them back."""
import numpy as np
import torch
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor

OK_FORMAT = False

name = "split_heads"
points = 7

q = Question(name)


@test_case(name="lesson: 6 tokens, d_model 512, 8 heads round trip", points=1, hidden=False)
def lesson_round_trip(split_heads, merge_heads):
    """split_heads gives one (6, 64) slice per head; merge_heads gives back x exactly."""
    x = randn(6, 512, seed=0, dtype="float64")
    q.check("split_heads", split_heads, x, 8, expected=snapshot("lesson_split"), grad=False)
    q.check_roundtrip("split_heads", split_heads, "merge_heads", merge_heads, x, 8)


@test_case(name="which features each head holds", points=1, hidden=False)
def small_split(split_heads):
    """x = arange(8) as 2 tokens of 4 features, 2 heads: head 0 holds features 0:2."""
    x = tensor([[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]])
    q.check("split_heads", split_heads, x, 2, expected=snapshot("small_split"))


@test_case(name="merge_heads of two heads", points=1, hidden=False)
def merge_two_heads(merge_heads):
    """Heads (2, 3, 2) back to (3, 4): token t's row holds head 0's two features, then head
    1's."""
    x = tensor([[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]]])
    q.check("merge_heads", merge_heads, x, expected=snapshot("merge_two_heads"))


@test_case(name="lesson: a batch of one sequence, and the PyTorch check's 4-D heads", points=1,
           hidden=False)
def lesson_batch_of_one(split_heads, merge_heads):
    """The lesson's X8 (3 tokens, d_model 8; rng = default_rng(0)) as a batch of one sequence,
    split into 2 heads of 4: (1, 2, 3, 4); and merge_heads of the lesson's PyTorch q, (batch 1,
    heads 2, tokens 3, d_head 4), back to (1, 3, 8). The same functions serve one sequence and a
    batch. (Inputs are drawn, never multiplied, and the 4-D q in float64 then rounded to
    float32: a product's last bits, and torch's float32 draw, which uses the CPU's vector
    instructions, may differ between machines, and a public case's inputs must be the same
    everywhere.)"""
    x8 = np.random.default_rng(0).normal(size=(3, 8))
    q.check("split_heads", split_heads, torch.from_numpy(x8)[None], 2,
            expected=snapshot("lesson_batch_split"))
    g = torch.Generator().manual_seed(0)
    q.check("merge_heads", merge_heads,
            torch.randn(1, 2, 3, 4, generator=g, dtype=torch.float64).float(),
            expected=snapshot("lesson_batch_merge"))


@test_case(name="split with batch dimensions, gradient", points=1, hidden=True)
def batched_split(split_heads):
    q.check("split_heads", split_heads, randn(2, 5, 12, seed=401), 3, seed=11)


@test_case(name="merge with batch dimensions, float64", points=1, hidden=True)
def batched_merge(merge_heads):
    q.check("merge_heads", merge_heads, randn(2, 4, 3, 5, seed=402, dtype="float64"), seed=12)


@test_case(name="one head, and one feature per head", points=1, hidden=True)
def edge_heads(split_heads, merge_heads):
    x = randn(3, 6, seed=403)
    q.check("split_heads", split_heads, x, 1, seed=13)
    q.check("split_heads", split_heads, x, 6, seed=14)
    q.check_roundtrip("split_heads", split_heads, "merge_heads", merge_heads, x, 6)
