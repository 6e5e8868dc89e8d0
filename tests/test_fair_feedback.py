"""Fair and actionable on real code: tolerances widened by the inputs' own precision (and no
further), numbers printed so that they differ, float32 rounding in float64 maths named,
signature notes only for what a call trips over, dependency notes only with evidence, shape
hints only where they apply, multi-line library errors tidied in every output."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from autograder.checking import checks
from autograder.model.assignment import load_assignment
from autograder.cases import Question, randn
from autograder.checking.question import ERROR_LINES, tidy_error
from autograder.diagnose import Evidence, float32_rounding
from autograder.feedback.terminal import question_lines
from autograder.platforms.gradescope.run import question_output
from autograder.course.report import feedback_markdown
from autograder.model.results import CaseResult, QuestionResult, SubmissionResult
from autograder.grading.runner import add_dependency_notes
from autograder.intake.signatures import call_problems, signature_note
from autograder.feedback.plain import question_feedback
from autograder.feedback.contract import question_json


def _large_logits() -> torch.Tensor:
    """The hidden large-logits case's inputs."""
    x = randn(2, 4, 6, seed=103, scale=50.0)
    x[0] += 1e4
    x[1] -= 1e4
    return x


def _shifted(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


# ------------------------------------------------------------------ tolerance policy

def test_ulp_of_matches_the_dtype():
    assert checks.ulp_of(1.0, "float32") == 2.0 ** -23
    assert checks.ulp_of(1e4, "float32") == 2.0 ** -10        # 8192 <= 1e4 < 16384
    assert checks.ulp_of(1e4, "float64") == 2.0 ** -39
    assert checks.ulp_of(0.0, "float32") == 0.0
    assert checks.ulp_of(1.0, "int64") == 0.0


def test_logsumexp_softmax_passes_only_with_the_inputs_precision():
    x = _large_logits()
    reference = _shifted(x)
    logsumexp = torch.exp(x - torch.logsumexp(x, dim=-1, keepdim=True))
    # The plain float32 tolerance calls it wrong: that is what the issue reported.
    assert checks.compare_values(reference, logsumexp, "out")
    slack = checks.input_precision_slack("exponent", [x])
    assert slack["float32"] == pytest.approx(2 * 2.0 ** -10)
    table = checks.widen({}, "exponent", slack)
    assert checks.compare_values(reference, logsumexp, "out", tolerance=table) == []


def test_the_widened_tolerance_still_catches_real_mistakes():
    x = _large_logits()
    table = checks.widen({}, "exponent", checks.input_precision_slack("exponent", [x]))
    reference = _shifted(x)
    no_max = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
    assert checks.compare_values(reference, no_max, "out", tolerance=table,
                                 large_inputs=True)[0].kind == "nan"
    wrong_axis = _shifted(x, dim=-2)
    assert checks.compare_values(reference, wrong_axis, "out", tolerance=table)
    # A float64 case gets a float64-sized widening: a float32 round trip still fails.
    x64 = x.double()
    table64 = checks.widen({}, "exponent", checks.input_precision_slack("exponent", [x64]))
    assert checks.compare_values(_shifted(x64), _shifted(x64.float()).double(), "out",
                                 tolerance=table64)


def test_small_inputs_are_not_widened_noticeably():
    x = torch.tensor([1.0, 2.0, 3.0])
    table = checks.widen({}, "exponent", checks.input_precision_slack("exponent", [x]))
    assert table["float32"][0] - checks.DEFAULT_TOLERANCE["float32"][0] < 1e-6


def test_scale_kind_widens_the_absolute_tolerance_and_gradients_scale_with_upstream():
    x = np.full((2, 3), 1e3, dtype=np.float32)
    slack = checks.input_precision_slack("scale", [x, np.array([True])])
    rtol, atol = checks.widen({}, "scale", slack)["float32"]
    assert rtol == checks.DEFAULT_TOLERANCE["float32"][0]
    assert atol == pytest.approx(checks.DEFAULT_TOLERANCE["float32"][1] + 2 * 2.0 ** -14)
    grad_rtol, grad_atol = checks.widen({}, "exponent", {"float32": 1e-3},
                                        atol_scale=4.0)["float32"]
    assert grad_atol == pytest.approx(checks.DEFAULT_TOLERANCE["float32"][1] + 4e-3)


def test_no_policy_leaves_the_question_tolerance_alone():
    assert checks.input_precision_slack(None, [torch.ones(3) * 1e6]) == {}
    assert checks.widen({"float32": (0.1, 0.2)}, None, {}) == {"float32": (0.1, 0.2)}
    with pytest.raises(ValueError):
        checks.input_precision_slack("logits", [])


# ------------------------------------------------------------------ numbers that differ

@given(st.floats(-1e6, 1e6, allow_nan=False), st.integers(1, 2 ** 20))
def test_two_different_numbers_never_print_the_same(value, ulps):
    other = float(np.nextafter(value, np.inf))
    for _ in range(ulps % 7):
        other = float(np.nextafter(other, np.inf))
    a, b = checks.fmt_pair(value, other)
    assert a != b


def test_the_float32_constant_message_shows_the_difference():
    e = torch.tensor([0.8022241854], dtype=torch.float64)
    g = e + 1.92e-9
    text = checks.compare_values(e, g, "the output")[0].public
    shown = text.split("expected ")[1]
    expected, got = shown.split(", got ")
    assert expected != got.split(")")[0], text


# ------------------------------------------------------------------ float32 rounding named

def _evidence(expected, got, grads=None):
    return Evidence("attention", "f", (), {}, {"output": expected, "grads": grads},
                    {"status": "ok", "output": got, "grads": grads}, False, {})


def test_float32_rounding_is_recognised_and_bounded():
    e = torch.linspace(-3, 3, 12, dtype=torch.float64)
    scale = torch.tensor(math.sqrt(8.0), dtype=torch.float32).double() / math.sqrt(8.0)
    assert float32_rounding(_evidence(e, e * scale))
    assert not float32_rounding(_evidence(e, e * (1 + 1e-5)))    # a real mistake's size
    assert not float32_rounding(_evidence(e, e + 1e-15))          # float64 noise
    assert not float32_rounding(_evidence(e, e.float()))          # lowered precision instead
    assert not float32_rounding(_evidence(e, e.float().double() * 2))


def test_a_float32_result_is_not_float32_rounding_whatever_its_gradients():
    """A layer norm that casts to float32 returns float32, while autograd hands float64
    gradients back carrying float32 rounding: that is `float32_cast`'s case alone, so the two
    rules do not both fit (and cancel each other into no name)."""
    e = torch.linspace(-3, 3, 12, dtype=torch.float64)
    grad = torch.linspace(1, 2, 12, dtype=torch.float64)
    evidence = Evidence("attention", "f", (), {}, {"output": e, "grads": {"x": grad}},
                        {"status": "ok", "output": e.float(), "grads": {"x": grad.float().double()}},
                        False, {})
    assert not float32_rounding(evidence)


# ------------------------------------------------------------------ signature notes

@pytest.fixture(scope="module")
def api():
    return load_assignment("attention").api


@pytest.mark.parametrize("params", [["X", "dim=-1"], ["logits", "dim=1"], ["x", "*args", "**kw"],
                                    ["x", "dim=-1", "eps=1e-9"], ["x", "dim=0", "**kw"]])
def test_harmless_differences_get_no_note(api, params):
    assert signature_note(api["softmax"], params) is None


@pytest.mark.parametrize("params, words", [
    (["x", "axis=-1"], "`dim=` by name fails"),
    (["x", "dim"], "leaves it out fails"),
    (["x", "kw:dim=-1"], "keyword-only"),
    (["x"], "1 positional argument"),
    (["x", "dim=-1", "temperature"], "extra parameter `temperature`"),
    (["dim=-1", "x=None"], "parameter 1 in yours but 2"),
])
def test_differences_a_call_trips_over_are_named(api, params, words):
    note = signature_note(api["softmax"], params)
    assert note and words in note
    assert "the contract is softmax(x, dim=-1)" in note


def test_the_contract_with_defaults_and_the_swapped_keywords(api):
    problems = call_problems(api["multi_head_attention"],
                             ["x", "params", "heads", "context=None", "mask=None"])
    assert len(problems) == 2 and all("by position mixes them up" in p for p in problems)


# ------------------------------------------------------------------ dependency notes

def _q(qid, *statuses, diagnosis=None, called=()):
    cases = [CaseResult(f"c{i}", 1.0, False, s, "" if s == "passed" else "wrong",
                        diagnosis=list(diagnosis or []) if s != "passed" else [])
             for i, s in enumerate(statuses)]
    return QuestionResult(qid, cases, called=list(called))


def _notes(questions):
    add_dependency_notes(load_assignment("attention"), questions)
    return {q.id: q.notes for q in questions.values()}


def test_dependency_note_when_the_helper_may_be_the_cause():
    notes = _notes({"multi_head": _q("multi_head", "passed", "failed"),
                    "block": _q("block", "failed", called=["multi_head_attention"])})
    assert len(notes["block"]) == 1
    assert "question 'multi_head'" in notes["block"][0]
    assert "may be part of" in notes["block"][0] and "may pass" not in notes["block"][0]


@pytest.mark.parametrize("helper, own", [
    # the helper only fails for a forbidden call: its values are right
    (("passed", "forbidden"), ("failed",)),
    # the block fails only for its own forbidden call
    (("failed",), ("forbidden",)),
])
def test_no_dependency_note_without_evidence(helper, own):
    notes = _notes({"multi_head": _q("multi_head", *helper),
                    "block": _q("block", *own, called=["multi_head_attention"])})
    assert notes["block"] == []


def test_no_dependency_note_when_the_question_has_its_own_named_mistake():
    notes = _notes({"multi_head": _q("multi_head", "failed", diagnosis=["weights_transposed"]),
                    "block": _q("block", "failed", diagnosis=["block_drops_mask"],
                                called=["multi_head_attention"])})
    assert notes["block"] == []
    shared = _notes({"multi_head": _q("multi_head", "failed", diagnosis=["mha_drops_mask"]),
                     "block": _q("block", "failed", diagnosis=["mha_drops_mask"],
                                 called=["multi_head_attention"])})
    assert len(shared["block"]) == 1


# ------------------------------------------------------------------ errors and shape hints

def _raise(question: Question, fn: str, message: str, code: str, numpy_inputs=False) -> str:
    got = {"status": "error", "forbidden": [], "error": {
        "type": "RuntimeError", "message": message, "line": 3, "file": "attention.py",
        "function": fn, "code": code}}
    problem, _ = question._status_problem(fn, got, numpy_inputs)
    return problem.public


@pytest.fixture(scope="module")
def questions():
    a = load_assignment("attention")
    return (Question("softmax", assignment=a),
            Question("attention", assignment=a, shape_hint="the scores are (..., Tq, Tk)"))


def test_shape_hints_only_where_they_apply(questions):
    softmax_q, attention_q = questions
    msg = "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dim 1"
    plain = _raise(softmax_q, "softmax", msg, "e = x - x.amax(dim=0)")
    assert "shape mismatch" in plain and ".T" not in plain and "Tq" not in plain
    transposed = _raise(attention_q, "scaled_dot_product_attention",
                        "mat1 and mat2 shapes cannot be multiplied (6x4 and 3x2)",
                        "scores = q @ k.T")
    assert "`.T` reverses every dimension" in transposed and "Tq, Tk" in transposed
    numpy_hint = _raise(attention_q, "scaled_dot_product_attention",
                        "operands could not be broadcast together", "s = q @ np.transpose(k)",
                        numpy_inputs=True)
    assert "np.swapaxes" in numpy_hint


def test_multi_line_errors_are_tidied():
    raw = "first line of the error\n" + "\n".join(f"  detail {i}" for i in range(40))
    text = tidy_error(raw)
    lines = text.split("\n")
    assert lines[0] == "first line of the error"
    assert all(line.startswith("    ") for line in lines[1:])
    assert len(lines) == ERROR_LINES + 2 and lines[-1].strip() == "..."
    assert len(tidy_error("x" * 5000)) <= 405
    assert tidy_error("") == ""


def test_every_output_indents_the_rest_of_a_multi_line_error():
    message = "softmax raised RuntimeError: first (line 3 of attention.py)\n    second"
    q = QuestionResult("softmax", [CaseResult("c", 1.0, False, "error", message, kind="error")])
    sub = SubmissionResult("s.py", {"softmax": q})
    plain = question_feedback(q).splitlines()
    # Each output indents the further line and marks it as the error's (`| `), so text from
    # the student's process never stands on a line of its own.
    assert plain[0].endswith("(line 3 of attention.py)") and plain[1] == "    | second"
    terminal = question_lines(q)
    assert terminal[1].endswith("(line 3 of attention.py)")
    assert terminal[2].strip() == "| second" and terminal[2].startswith(" " * 8)
    assert "\n  - \\| second" in feedback_markdown(sub, "s.py")
    assert "\n           | second" in question_output(question_json(q), qid="softmax")


def test_only_a_line_feed_breaks_an_error_line():
    """Other separators (CR, NEL, LS) stay inside the line, where the outputs escape them."""
    text = tidy_error("first\rsecond\x85third\u2028fourth\nfifth")
    assert text.split("\n") == ["first\rsecond\x85third\u2028fourth", "    fifth"]


def test_unpacking_a_shape_gets_a_shape_hint_and_other_unpacking_does_not(questions):
    _, attention_q = questions
    msg = "not enough values to unpack (expected 3, got 2)"
    hinted = _raise(attention_q, "multi_head_attention", msg, "B, T, C = x.size()")
    assert "extra leading dimensions" in hinted and "*lead, T, d = x.shape" in hinted
    assert "shape" not in _raise(attention_q, "multi_head_attention", msg, "a, b, c = pair")
