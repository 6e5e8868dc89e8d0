"""Question positions: the sinusoidal position encodings of "Attention is all you need", and
adding them to tokens."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot

OK_FORMAT = False

name = "positions"
points = 6

q = Question(name)


@test_case(name="4 positions, d_model 4", points=1, hidden=False)
def small(sinusoidal_positions):
    """Row 0 is [0, 1, 0, 1] (sin 0, cos 0); row 1 starts sin(1), cos(1), sin(0.01),
    cos(0.01)."""
    q.check("sinusoidal_positions", sinusoidal_positions, 4, 4, expected=snapshot("small"))


@test_case(name="3 positions, d_model 6, base 100", points=1, hidden=False)
def other_base(sinusoidal_positions):
    """With base 100, feature pair i turns at the angle t / 100 ** (2i / 6)."""
    q.check("sinusoidal_positions", sinusoidal_positions, 3, 6, base=100.0,
            expected=snapshot("other_base"))


@test_case(name="positions added to three tokens", points=1, hidden=False)
def added(add_positions):
    """Three tokens of four features: token t gets row t of the encodings."""
    q.check("add_positions", add_positions, randn(3, 4, seed=801), expected=snapshot("added"))


@test_case(name="a long sequence and many features", points=1, hidden=True)
def long(sinusoidal_positions):
    q.check("sinusoidal_positions", sinusoidal_positions, 50, 32)


@test_case(name="added to a batch, float64", points=1, hidden=True)
def added_float64(add_positions):
    q.check("add_positions", add_positions, randn(2, 7, 10, seed=802, dtype="float64"),
            seed=51)


@test_case(name="added with another base, one position", points=1, hidden=True)
def added_one(add_positions):
    q.check("add_positions", add_positions, randn(2, 1, 8, seed=803), 500.0, seed=52)
