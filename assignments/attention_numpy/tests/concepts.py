"""Question concepts (NumPy track): the lessons' knowledge checks, answered as plain values.

The student's file sets variables (`head_size_512_dims_8_heads = ...`); otter and the grader
pass them to these cases by name, like functions. The right answers live in the hidden
reference; the snapshots that ship to students keep only their digests. A wrong answer gets a
hint that points at the idea, never at the number.
"""
from otter.test_files import test_case

from autograder.cases import Question, snapshot

OK_FORMAT = False

name = "concepts"
points = 6

q = Question(name)


@test_case(name="the shape of one head's weight table for 6 tokens", points=1, hidden=False)
def table_shape(head_weights_shape_6_tokens):
    """Lesson M3.3, knowledge check 1."""
    q.check_answer(
        "head_weights_shape_6_tokens", head_weights_shape_6_tokens,
        expected=snapshot("table_shape"),
        hint="the table has one row per token that looks (a query) and one column per token "
             "that is looked at (a key); write its shape as a tuple (rows, columns)",
        wrong={(6, 64): "that is the shape of one head's queries or keys (tokens by head "
                        "size); the weight table pairs tokens with tokens",
               (1, 6): "that is a single row; the table has one row for every token"})


@test_case(name="how the table grows when the sequence doubles", points=1, hidden=False)
def table_growth(table_growth_when_tokens_double):
    """Lesson M3.3, knowledge check 3."""
    q.check_answer(
        "table_growth_when_tokens_double", table_growth_when_tokens_double,
        expected=snapshot("table_growth"),
        hint="the table has one row and one column per token; count its entries before and "
             "after the sequence doubles",
        wrong={2: "that would be right if only the rows grew, but the columns grow too",
               1: "the table's size depends on the number of tokens"})


@test_case(name="the head size for 512-dimensional vectors and 8 heads", points=1, hidden=False)
def head_size(head_size_512_dims_8_heads):
    """Lesson 2.1, knowledge check 2."""
    q.check_answer(
        "head_size_512_dims_8_heads", head_size_512_dims_8_heads,
        expected=snapshot("head_size"),
        hint="the heads share the vector: each one gets an equal slice of its features",
        wrong={4096: "the heads share the 512 features between them; they do not each get "
                     "512 of their own",
               512: "each head works on a slice of the vector, not on all of it",
               8: "that is the number of heads; the question asks how many features each "
                  "head gets"})


@test_case(name="attention weights per head for 196 image patches", points=1, hidden=False)
def patch_weights(weights_per_head_196_patches):
    """Lesson M3.3, on the cost of attention."""
    q.check_answer(
        "weights_per_head_196_patches", weights_per_head_196_patches,
        expected=snapshot("patch_weights"),
        hint="each patch is a token, and one head's weight table has a row and a column for "
             "every token",
        wrong={196: "that is the number of patches; the table has a row and a column per patch",
               392: "the table's rows and columns multiply; they do not add"})


@test_case(name="what each row of attention weights sums to", points=1, hidden=False)
def row_sum(weights_row_sum):
    """Lesson 2.1, knowledge check 1."""
    q.check_answer(
        "weights_row_sum", weights_row_sum, expected=snapshot("row_sum"),
        hint="each row of weights is the output of a softmax; recall what softmax makes a row "
             "add up to")


@test_case(name="what shuffling the tokens changes", points=1, hidden=False)
def shuffling(shuffling_changes_more_than_order):
    """Lesson 2.1, on position information."""
    q.check_answer(
        "shuffling_changes_more_than_order", shuffling_changes_more_than_order,
        expected=snapshot("shuffling"),
        hint="attention treats its input as a set: the lesson compares attention(X[perm]) "
             "with attention(X)[perm]; try it with your own function")
