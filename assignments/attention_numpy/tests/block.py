"""Question block (NumPy track): layer normalisation and a post-norm transformer block."""
from otter.test_files import test_case

from autograder.cases import (Question, array, block_params, future_mask, randn, snapshot,
                              to_numpy)

OK_FORMAT = False

name = "block"
points = 9

# NumPy has no layer norm to forbid; torch's, for a student who converts to tensors and back.
q = Question(name, forbidden=["torch.nn.functional.layer_norm", "torch.layer_norm"],
             tolerance={"float32": (2e-4, 2e-5)})


def rand(*shape, seed, dtype="float32", scale=1.0, shift=0.0):
    return to_numpy(randn(*shape, seed=seed, dtype=dtype, scale=scale, shift=shift))


@test_case(name="layer_norm of a small batch", points=1, hidden=False)
def layer_norm_small(layer_norm):
    """Rows normalised to mean 0 and variance 1, then scaled and shifted (float32). The third row
    varies little (variance 4.5e-4), so the default eps, 1e-5 inside the square root, changes
    its result by about 1%: another default (0, 1e-6, 1e-3) shows here."""
    x = array([[1.0, 2.0, 3.0, 4.0], [2.0, -2.0, 0.5, 8.0], [0.01, -0.02, 0.03, -0.02]])
    gamma, beta = array([1.0, 0.5, 2.0, 1.0]), array([0.0, 0.1, -0.2, 0.3])
    q.check("layer_norm", layer_norm, x, gamma, beta, expected=snapshot("layer_norm_small"))


@test_case(name="block: 3 tokens, d_model 8, 2 heads", points=1, hidden=False)
def block_small(transformer_block):
    """A post-norm block keeps the shape (3, 8)."""
    x = rand(3, 8, seed=1600)
    q.check("transformer_block", transformer_block, x, to_numpy(block_params(8, 16, seed=1601)),
            2, expected=snapshot("block_small"))


@test_case(name="layer_norm with eps=0.05 given, a row nearly constant", points=1,
           hidden=False)
def layer_norm_given_eps(layer_norm):
    """Row 0 varies little (variance 0.045) and row 1 hardly at all, so the eps given (0.05
    here, not the default) changes the result: it belongs inside the square root,
    sqrt(var + eps)."""
    x = array([[2.0, 2.3, 1.7, 2.0], [1.0, 1.001, 0.999, 1.0]])
    gamma, beta = array([1.0, 2.0, 1.0, 0.5]), array([0.0, 0.1, 0.0, -0.1])
    q.check("layer_norm", layer_norm, x, gamma, beta, eps=0.05,
            expected=snapshot("layer_norm_given_eps"))


@test_case(name="block with a causal mask", points=1, hidden=False)
def block_causal(transformer_block):
    """The mask reaches the attention inside the block; the result is (3, 8) as before."""
    x = rand(3, 8, seed=1620)
    q.check("transformer_block", transformer_block, x,
            to_numpy(block_params(8, 16, seed=1621)), 2, mask=to_numpy(future_mask(3)),
            expected=snapshot("block_causal"))


@test_case(name="block: the same 3 tokens as a batch of one sequence", points=1, hidden=False)
def block_batch_of_one(transformer_block):
    """The first block case's x as a batch of one, (1, 3, 8): the block keeps that shape."""
    x = rand(3, 8, seed=1600)[None]
    q.check("transformer_block", transformer_block, x, to_numpy(block_params(8, 16, seed=1601)),
            2, expected=snapshot("block_batch_of_one"))


@test_case(name="layer_norm, float64 with batch dimensions", points=1, hidden=True)
def layer_norm_batched(layer_norm):
    x = rand(2, 3, 6, seed=1602, dtype="float64", scale=3.0, shift=1.0)
    gamma = rand(6, seed=1603, dtype="float64", shift=1.0)
    beta = rand(6, seed=1604, dtype="float64")
    q.check("layer_norm", layer_norm, x, gamma, beta)


@test_case(name="layer_norm with a near-constant row and custom eps", points=1, hidden=True)
def layer_norm_eps(layer_norm):
    x = rand(3, 5, seed=1605, scale=1e-3)
    gamma, beta = rand(5, seed=1606, shift=1.0), rand(5, seed=1607)
    q.check("layer_norm", layer_norm, x, gamma, beta, eps=1e-3)


@test_case(name="block with a causal mask, batch, float64", points=1, hidden=True)
def block_masked(transformer_block):
    x = rand(2, 5, 8, seed=1608, dtype="float64")
    q.check("transformer_block", transformer_block, x,
            to_numpy(block_params(8, 32, seed=1609, dtype="float64")), 4,
            mask=to_numpy(future_mask(5)))


@test_case(name="block with small d_model and one head", points=1, hidden=True)
def block_small_model(transformer_block):
    x = rand(4, 4, seed=1610, scale=2.0)
    q.check("transformer_block", transformer_block, x, to_numpy(block_params(4, 8, seed=1611)), 1)
