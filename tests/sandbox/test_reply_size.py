"""A reply is bounded as a whole where it is made: an honest answer whose tensors pass the
256 MiB a message may carry travels with the rest sent as "too large to check", never as a
message the trusted side refuses as malformed."""
import numpy as np
import torch

from autograder.sandbox import wire
from autograder.sandbox.protocol import decode_outcome, encode_outcome


def test_an_honest_reply_over_the_limit_says_too_large():
    # Five tensors of 60 MiB: each under the per-array limit, 300 MiB in all.
    big = tuple(torch.zeros(15_000_000) for _ in range(5))
    buffers: list[bytes] = []
    tree = encode_outcome({"status": "ok", "output": big, "grads": None}, buffers)
    assert sum(map(len, buffers)) <= wire.MAX_MESSAGE
    items = tree["output"]["items"]
    assert [i["t"] for i in items] == ["tensor"] * 4 + ["other"]
    assert "too large to check" in items[4]["type"] and "256 MiB" in items[4]["type"]
    # What the trusted side reads from it: a value, not a refusal.
    out = decode_outcome(tree, buffers)
    assert out["status"] == "ok" and len(out["output"]) == 5


def test_numpy_arrays_are_bounded_too():
    arrays = [np.zeros(15_000_000, dtype=np.float32) for _ in range(5)]
    buffers: list[bytes] = []
    nodes = [wire.encode(a, buffers) for a in arrays]
    assert [n["t"] for n in nodes] == ["ndarray"] * 4 + ["other"]


def test_a_reply_within_the_limit_is_unchanged():
    buffers: list[bytes] = []
    tree = encode_outcome({"status": "ok", "output": torch.ones(3), "grads": None}, buffers)
    assert tree["output"]["t"] == "tensor" and len(buffers) == 1
