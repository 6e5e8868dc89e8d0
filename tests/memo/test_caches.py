"""The trusted side's caches: every submission gets the same inputs, so inputs, their digests,
their encodings and float64 copies are remembered; a tensor changed in place is never served
from a stale entry. (Remembered encodings are tested with the wire format, in
tests/sandbox/test_wire_properties.py.)"""

import numpy as np
import torch

from autograder import cases
from autograder.checking import checks
from autograder.sandbox.execute import run_call
from autograder.memo.fingerprint import call_digest


def test_equal_inputs_have_equal_digests_and_any_difference_shows():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    base = call_digest("f", 0, True, (x,), {"mask": None})
    assert call_digest("f", 0, True, (x.clone(),), {"mask": None}) == base
    assert call_digest("f", 1, True, (x,), {"mask": None}) != base          # seed
    assert call_digest("f", 0, False, (x,), {"mask": None}) != base         # gradients
    assert call_digest("g", 0, True, (x,), {"mask": None}) != base          # function
    assert call_digest("f", 0, True, (x.double(),), {"mask": None}) != base  # dtype
    assert call_digest("f", 0, True, (x.reshape(3, 2),), {"mask": None}) != base  # shape
    assert call_digest("f", 0, True, ([x],), {}) != call_digest("f", 0, True, ((x,),), {})
    assert call_digest("f", 0, True, (x,), {"mask": 1}) != base              # other values
    assert call_digest("f", 0, True, (x.numpy(),), {"mask": None}) != base   # ndarray
    x[0, 0] = 7.0                                                            # in place
    assert call_digest("f", 0, True, (x,), {"mask": None}) != base


def test_seeded_inputs_are_made_once_and_again_after_a_change_in_place():
    a = cases.randn(3, 4, seed=11)
    assert cases.randn(3, 4, seed=11) is a
    assert cases.randn(3, 4, seed=12) is not a
    assert cases.randn(3, 4, seed=11, dtype="float64").dtype == torch.float64
    original = a.clone()
    a.mul_(0)
    b = cases.randn(3, 4, seed=11)
    assert b is not a and torch.equal(b, original)
    assert cases.future_mask(4) is cases.future_mask(4)
    assert torch.equal(cases.future_mask(3), torch.ones(3, 3, dtype=torch.bool).triu(1))


def test_float64_copies_follow_changes_and_refuse_non_finite_values():
    t = torch.tensor([1.0, 2.0])
    assert np.array_equal(checks.finite_float64(t), [1.0, 2.0])
    t[1] = 5.0
    assert np.array_equal(checks.finite_float64(t), [1.0, 5.0])
    t[0] = float("nan")
    assert checks.finite_float64(t) is None
    # The fast path of compare_values agrees with the full one on both sides of the line.
    e = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert checks.compare_values(e, e + 1e-12, "x") == []
    assert checks.compare_values(e, e + 1e-6, "x")[0].kind == "values"


def test_changes_in_place_are_found_bit_for_bit_nan_included():
    def touch(x):
        x[0] = x[0] * 1.0   # the same value written back: no change
        return x.sum()

    def nan_kept(x):
        return x.nansum()

    def bump(x):
        x[1] += 1
        return x.sum()

    x = torch.tensor([1.0, float("nan"), 3.0])
    assert run_call(touch, (x,), {})["mutated"] == []
    assert run_call(nan_kept, (x,), {})["mutated"] == []
    assert run_call(bump, (torch.tensor([1.0, 2.0]),), {})["mutated"] == ["0/0"]
    assert run_call(bump, (torch.tensor([1.0, 2.0], dtype=torch.float64),), {})["mutated"] \
        == ["0/0"]



def test_the_float64_copies_kept_stay_within_their_memory_budget():
    # Each submission's outputs are new tensors: a class of large outputs must not pile up.
    for _ in range(60):
        checks.finite_float64(torch.ones(500_000))          # 2 MB, and a 4 MB copy
    assert 0 < checks._copies.nbytes <= checks._copies.max_bytes
    big = torch.ones(2_000_000)                              # beyond the per-tensor cap
    assert checks.finite_float64(big) is not None
    assert not checks._copies.holds(big)
