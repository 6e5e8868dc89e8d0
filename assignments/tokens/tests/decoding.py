"""Question decoding: one step of causal self-attention with a cache of keys and values."""
from otter.test_files import test_case

from autograder.cases import Question, attention_params, randn, snapshot, tensor

OK_FORMAT = False

name = "decoding"
points = 6

q = Question(name, forbidden=["torch.nn.functional.scaled_dot_product_attention"],
             shape_hint="the scores are (..., S, L + S): S new tokens against the L cached "
                        "ones and themselves")

X3 = [[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]


@test_case(name="the first step: three tokens, no cache", points=1, hidden=False)
def first_step(decode_step):
    """The lesson's red, block, box vectors with no cache: each token attends to itself and the
    tokens before it; the cache returned holds their three keys and values."""
    q.check("decode_step", decode_step, tensor(X3), attention_params(4, seed=601),
            expected=snapshot("first_step"))


@test_case(name="one new token after a cache of two", points=1, hidden=False)
def one_token(decode_step):
    """Generating: the new token reads both cached tokens and itself."""
    cache = {"k": randn(2, 4, seed=602), "v": randn(2, 4, seed=603)}
    q.check("decode_step", decode_step, tensor([X3[2]]), attention_params(4, seed=601),
            cache, expected=snapshot("one_token"))


@test_case(name="two new tokens after a cache of three", points=1, hidden=False)
def two_tokens(decode_step):
    """The first new token is at position 3 and reads positions 0..3; the second reads 0..4.
    The cached keys are large (scores in the hundreds), as a long generation's can grow:
    exp() of such scores overflows float32 unless each row's maximum comes off first."""
    cache = {"k": randn(3, 4, seed=604, scale=1000.0), "v": randn(3, 4, seed=605)}
    q.check("decode_step", decode_step, tensor(X3[:2]), attention_params(4, seed=601), cache,
            expected=snapshot("two_tokens"), large_inputs=True)


@test_case(name="a batch, float64, several new tokens", points=1, hidden=True)
def batched(decode_step):
    cache = {"k": randn(2, 5, 8, seed=606, dtype="float64"),
             "v": randn(2, 5, 8, seed=607, dtype="float64")}
    q.check("decode_step", decode_step, randn(2, 3, 8, seed=608, dtype="float64"),
            attention_params(8, seed=609, dtype="float64"), cache, seed=31)


@test_case(name="a batch of first steps", points=1, hidden=True)
def batched_first(decode_step):
    q.check("decode_step", decode_step, randn(3, 4, 16, seed=610),
            attention_params(16, seed=611), seed=32)


@test_case(name="a long cache, one token", points=1, hidden=True)
def long_cache(decode_step):
    cache = {"k": randn(20, 16, seed=612), "v": randn(20, 16, seed=613)}
    q.check("decode_step", decode_step, randn(1, 16, seed=614), attention_params(16, seed=611),
            cache, seed=33)
