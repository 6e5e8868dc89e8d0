"""Question loss: the mean cross-entropy of next-token predictions, and their accuracy."""
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot, tensor

OK_FORMAT = False

name = "loss"
points = 6

q = Question(name, forbidden=["torch.nn.functional.cross_entropy",
                              "torch.nn.functional.nll_loss",
                              "torch.nn.functional.log_softmax", "torch.log_softmax",
                              "torch.Tensor.log_softmax",
                              "torch.logsumexp", "torch.Tensor.logsumexp"],
             # The accuracy is a Python float, but an honest one is often a float32 division
             # (`float(correct.sum() / counted.sum())`): float32's tolerance for it.
             tolerance={"accuracy": {"float64": (1.3e-6, 1e-5)}})


@test_case(name="three positions, a vocabulary of four", points=1, hidden=False)
def small(next_token_loss):
    """The second and third predictions are right: accuracy 2/3."""
    logits = tensor([[2.0, 0.5, 0.1, -1.0], [0.0, 1.0, 3.0, 0.0], [0.3, 0.2, 0.1, 2.5]])
    targets = tensor([1, 2, 3], dtype="int64")
    q.check("next_token_loss", next_token_loss, logits, targets, expected=snapshot("small"))


@test_case(name="padding (-100) counts in neither loss nor accuracy", points=1, hidden=False)
def padding(next_token_loss):
    """Two sequences of three positions; the last position of the second is padding."""
    logits = tensor([[[1.0, 2.0, 0.0], [0.5, 0.5, 3.0], [2.0, 1.0, 1.0]],
                     [[0.0, 0.0, 1.0], [1.0, -1.0, 0.0], [9.0, 9.0, 9.0]]])
    targets = tensor([[1, 2, 1], [2, 1, -100]], dtype="int64")
    q.check("next_token_loss", next_token_loss, logits, targets, expected=snapshot("padding"))


@test_case(name="large logits", points=1, hidden=False)
def large(next_token_loss):
    """Logits in the hundreds: exp() of them overflows unless each row's maximum comes off
    first."""
    logits = tensor([[800.0, 790.0, 700.0], [-50.0, 120.0, 119.0]])
    targets = tensor([1, 2], dtype="int64")
    q.check("next_token_loss", next_token_loss, logits, targets, expected=snapshot("large"),
            large_inputs=True)


@test_case(name="a batch, float64", points=1, hidden=True)
def batched(next_token_loss):
    logits = randn(2, 6, 5, seed=701, dtype="float64", scale=2.0)
    targets = randn(2, 6, 5, seed=702).argmax(dim=-1)
    q.check("next_token_loss", next_token_loss, logits, targets, seed=41)


@test_case(name="padding at the start, another ignore_index", points=1, hidden=True)
def other_ignore(next_token_loss):
    logits = randn(3, 4, 7, seed=703)
    targets = tensor([[0, 0, 3, 6], [0, 5, 2, 2], [0, 0, 0, 1]], dtype="int64")
    q.check("next_token_loss", next_token_loss, logits, targets, 0, seed=42)


@test_case(name="large logits in a batch", points=1, hidden=True)
def large_batch(next_token_loss):
    logits = randn(2, 5, 9, seed=704, scale=300.0)
    targets = randn(2, 5, 9, seed=705).argmax(dim=-1)
    q.check("next_token_loss", next_token_loss, logits, targets, seed=43, large_inputs=True)
