"""Unit and property-based tests of the checks library (the wire format's are in
tests/sandbox/test_wire_properties.py)."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.checking import checks
from autograder.checking.checks import Labels
from autograder.feedback.plain import question_feedback

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


def test_an_output_of_the_wrong_rank_is_a_shape_problem_not_a_grader_fault(grade, tmp_path):
    """A softmax that flattens its result: the cases along another `dim` used to end the whole
    submission as an internal error (the weights-sum property summed along a dimension the
    output does not have); the shape is what is wrong, and the other questions keep their
    points."""
    from helpers import QUESTIONS, SUBMISSIONS

    sub = tmp_path / "flattens.py"
    sub.write_text((SUBMISSIONS / "hostile" / "honest.py").read_text() + '''

def softmax(x, dim=-1):
    return _softmax(x, dim).reshape(-1)
''')
    result = grade(sub)
    assert result.error is None
    softmax = result.questions["softmax"]
    assert softmax.status == "partial" and 0 < softmax.score < softmax.max_score  # 1-D cases pass
    assert "has the wrong shape" in question_feedback(softmax) and "Traceback" not in question_feedback(softmax)
    for qid in QUESTIONS[1:]:
        assert result.questions[qid].status == "passed", (qid, question_feedback(result.questions[qid]))
