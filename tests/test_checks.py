"""Unit and property-based tests of the checks library and the safe wire format."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder import checks
from autograder.sandbox import wire
from autograder.checks import Labels

FLOATS = st.sampled_from([np.float32, np.float64])


def arrays(dtype=FLOATS, max_dims=4):
    return dtype.flatmap(lambda d: hnp.arrays(
        d, hnp.array_shapes(min_dims=1, max_dims=max_dims, max_side=5),
        elements=st.floats(-1e3, 1e3, width=32)))


@given(arrays())
def test_identical_tensors_have_no_problems(a):
    t = torch.from_numpy(a)
    assert checks.compare_tensor(t, t.clone(), "x") == []


@given(arrays(), st.integers(0, 10_000), st.floats(0.5, 100))
def test_a_perturbation_beyond_tolerance_is_found_where_it_is(a, where, delta):
    t = torch.from_numpy(a)
    i = where % t.numel()
    got = t.clone()
    got.view(-1)[i] += delta
    problems = checks.compare_tensor(t, got, "x")
    assert len(problems) == 1 and problems[0].kind == "values"
    idx = np.unravel_index(i, a.shape)
    assert f"at index {checks.fmt_index(idx)}" in problems[0].public
    assert "at index" not in problems[0].hidden  # hidden cases never locate expected values


@given(arrays(st.just(np.float32)))
def test_float32_rounding_is_tolerated(a):
    t = torch.from_numpy(a)
    got = t * (1 + 1e-6)
    assert checks.compare_tensor(t, got, "x") == []


def test_float64_is_strict_enough_to_catch_a_float32_round_trip():
    t = torch.randn(50, dtype=torch.float64)
    got = t.float().double() * (1 + 3e-7)
    assert checks.compare_tensor(t, got, "x")[0].kind == "values"


@given(hnp.array_shapes(min_dims=1, max_dims=4, max_side=4),
       hnp.array_shapes(min_dims=1, max_dims=4, max_side=4))
def test_shape_messages_quote_both_shapes(s1, s2):
    e, g = torch.zeros(s1), torch.zeros(s2)
    problems = checks.compare_tensor(e, g, "x")
    if tuple(s1) == tuple(s2):
        assert problems == []
    else:
        assert problems[0].kind == "shape"
        assert checks.fmt_shape(s1) in problems[0].public
        assert checks.fmt_shape(s2) in problems[0].public
        assert checks.fmt_shape(s1) not in problems[0].hidden or s1 == s2


def test_messages_for_the_issue_examples():
    p = checks.compare_tensor(torch.zeros(2, 4, 3), torch.zeros(2, 3, 4), "the output")[0]
    assert "expected shape (2, 4, 3), got (2, 3, 4)" in p.public
    p = checks.compare_tensor(torch.zeros(3, dtype=torch.float64), torch.zeros(3), "y")[0]
    assert "expected dtype float64, got float32" in p.public
    weights = torch.full((2, 3), 0.62 / 3)
    p = checks.rows_sum_to_one()(weights, {}, Labels("f"))[0]
    assert "sum to 0.62, not 1" in p.public


def test_nan_is_reported_with_an_overflow_hint():
    exp = torch.tensor([0.0, 0.0, 1.0])
    got = torch.tensor([float("nan")] * 3)
    p = checks.compare_tensor(exp, got, "y", large_inputs=True)[0]
    assert p.kind == "nan" and "subtract the maximum" in p.public


@given(st.floats(0, 0.5))
def test_zero_where_flags_weight_on_blocked_positions(leak):
    mask = torch.ones(3, 3, dtype=torch.bool).triu(1)
    w = torch.eye(3, dtype=torch.float64)
    w[0, 2] = leak
    problems = checks.zero_where(mask)(w, {}, Labels("f"))
    assert bool(problems) == (leak > 1e-6)


def test_gradient_messages():
    labels = Labels("attn", ["q", "k", "v"])
    exp = {"0/0": torch.ones(2), "0/1": torch.ones(2)}
    p = checks.compare_gradients(exp, {"0/0": torch.ones(2), "0/1": None}, None, labels)[0]
    assert p.public == "no gradient reaches `k`: something in your code detached it"
    p = checks.compare_gradients(exp, None, "detached", labels)[0]
    assert "not connected" in p.public
    p = checks.compare_gradients(exp, {"0/0": torch.ones(2), "0/1": torch.zeros(2)}, None,
                                 labels)[0]
    assert "gradient with respect to `k`" in p.public


def test_labels_name_nested_parameters():
    labels = Labels("mha", ["x", "params", "n_heads"])
    assert labels.arg("0/1/w_q") == '`params["w_q"]`'
    assert labels.arg("1/context") == "`context`"


# ------------------------------------------------------------------ wire format

values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.text(max_size=20),
              arrays().map(torch.from_numpy), arrays()),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.tuples(children, children),
                               st.dictionaries(st.text(max_size=5), children, max_size=3)),
    max_leaves=6)


def _equal(a, b):
    if isinstance(a, torch.Tensor):
        return type(b) is torch.Tensor and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=60)
@given(values)
def test_wire_round_trip(value):
    buffers = []
    node = wire.encode(value, buffers)
    framed = wire.pack({"v": node}, buffers)
    pos = [0]

    def read(n):
        chunk = framed[pos[0]:pos[0] + n]
        pos[0] += n
        return chunk

    header, bufs = wire.unpack(read)
    assert _equal(value, wire.decode(header["v"], bufs))
    assert _equal(value, wire.decode(wire.encode(value, None), None))  # inline (snapshots)


def test_wire_returns_exact_base_types_for_subclasses():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    t = torch.arange(3.0).as_subclass(Liar)
    buffers = []
    back = wire.decode(wire.encode(t, buffers), buffers)
    assert type(back) is torch.Tensor

    class LyingArray(np.ndarray):
        pass

    a = np.arange(3.0).view(LyingArray)
    buffers = []
    assert type(wire.decode(wire.encode(a, buffers), buffers)) is np.ndarray


@pytest.mark.parametrize("node", [
    {"t": "tensor", "dtype": "float32", "shape": [2**31, 2**31], "buf": 0},
    {"t": "tensor", "dtype": "object", "shape": [1], "buf": 0},
    {"t": "ndarray", "dtype": "float64", "shape": [3], "buf": 0},
    {"t": "ndarray", "dtype": "float64", "shape": [-1], "buf": 0},
    {"t": "pickle", "data": "gASV"},
    {"t": "list", "items": [{"t": "none"}] * 1000},
])
def test_wire_rejects_forged_nodes(node):
    with pytest.raises(wire.WireError):
        wire.decode(node, [b"\x00" * 8])


def test_unpack_checks_sizes_before_reading():
    import struct

    reads = []

    def read(n):
        reads.append(n)
        if len(reads) == 1:
            return struct.pack("!I", 2**31)
        raise AssertionError("must not read a huge header")

    with pytest.raises(wire.WireError):
        wire.unpack(read)


def test_arrays_in_the_other_byte_order_keep_their_values():
    a = np.arange(4, dtype=">f8") / 3
    buffers: list[bytes] = []
    back = wire.decode(wire.encode(a, buffers), buffers)
    assert back.dtype == np.float64 and np.array_equal(back, a)
