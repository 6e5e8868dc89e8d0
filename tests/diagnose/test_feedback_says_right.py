"""Feedback that is right when it names something, and words that agree with the grading
(issue: students see what the grader knows, sections 2 and 5), in both tracks where the mistake
exists in both."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, cli_in_process

from autograder.model.assignment import load_assignment
from autograder.checking.checks import OVERFLOW_ADVICE
from autograder.grading.grade import check_in_process
from autograder.feedback.plain import question_feedback

NUMPY = load_assignment("attention_numpy")


def _failing(result, qid: str) -> list:
    return [c for c in result.questions[qid].cases if c.status != "passed"]


def _named(result, qid: str) -> set[str]:
    return {m for c in result.questions[qid].cases for m in (c.diagnosis or [])}


# ------------------------------------------------------------------ named right

def test_a_global_maximum_is_named_under_softmax_without_the_advice_it_follows(corpus_results):
    graded = corpus_results["softmax_global_max.py"]
    checked = check_in_process(load_assignment("attention"),
                               SUBMISSIONS / "wrong" / "softmax_global_max.py")
    numpy = check_in_process(NUMPY, SUBMISSIONS / "realworld" / "numpy_softmax_global_max.py")
    for result in (graded, checked, numpy):
        assert _named(result, "softmax") == {"softmax_global_max"}
        for c in _failing(result, "softmax"):
            assert OVERFLOW_ADVICE not in c.message and "subtract the maximum first" \
                not in c.message, c.message


def test_a_right_output_by_chance_names_the_mistake_the_other_cases_name(corpus_results):
    """d_k instead of sqrt(d_k): on masked scores of size 1e4 the softmax saturates and the
    output is right; the gradient is not. The case says so, naming the same mistake."""
    result = corpus_results["attention_divides_by_dk.py"]
    case = next(c for c in result.questions["mask"].cases if c.name.startswith("masked large"))
    assert case.message.startswith("your output is right, but the gradient"), case.message
    assert case.diagnosis == ["scale_by_dk"]
    assert "the output is right here only because these inputs hide the mistake" in case.hint
    assert "scores divided by d_k instead of sqrt(d_k)" in case.hint
    assert "the output is right here only" in question_feedback(result.questions["mask"])


def test_numpy_on_a_tensor_that_needs_a_gradient_names_the_cut(corpus_results):
    """Torch's own advice (`.detach().numpy()`) would cut the gradient: the hint says so. (The
    NumPy track has no gradients, so no such mistake.)"""
    result = corpus_results["attention_calls_numpy.py"]
    first = _failing(result, "attention")[0]
    assert "Use tensor.detach().numpy() instead" in first.message
    assert first.diagnosis == ["numpy_round_trip"]
    assert "would run but cut the gradient" in first.hint
    assert _named(result, "attention") == {"numpy_round_trip"}


def _numpy_merge_without_transpose(tmp_path: Path) -> Path:
    source = (SUBMISSIONS / "numpy" / "correct" / "einsum_style.py").read_text()
    old = "    x = np.moveaxis(x, -3, -2)\n    return x.reshape(x.shape[:-2] + (x.shape[-2] * " \
          "x.shape[-1],))"
    assert old in source
    path = tmp_path / "merge.py"
    path.write_text(source.replace(old, "    *lead, h, t, d = x.shape\n"
                                        "    return x.reshape(*lead, t, h * d)"))
    return path


def test_merge_without_the_transpose_is_named_under_split_heads(corpus_results, tmp_path):
    graded = corpus_results["merge_heads_forgets_transpose.py"]
    checked = check_in_process(load_assignment("attention"),
                               SUBMISSIONS / "wrong" / "merge_heads_forgets_transpose.py")
    numpy = check_in_process(NUMPY, _numpy_merge_without_transpose(tmp_path))
    for result in (graded, checked, numpy):
        case = next(c for c in result.questions["split_heads"].cases
                    if c.name == "merge_heads of two heads")
        assert case.status == "failed" and case.diagnosis == ["merge_no_transpose"], case


@pytest.mark.parametrize("name, mistake", [("layer_norm_no_eps.py", "layer_norm_no_eps"),
                                           ("block_mixed_norm.py", "mixed_norm")])
def test_layer_norm_without_eps_and_a_hybrid_block_are_named(name, mistake, corpus_results):
    graded = corpus_results[name]
    assert _named(graded, "block") == {mistake}
    for track, folder in (("attention", SUBMISSIONS / "wrong"),
                          ("attention_numpy", SUBMISSIONS / "numpy" / "wrong")):
        checked = check_in_process(load_assignment(track), folder / name)
        public = {m for c in checked.questions["block"].cases for m in c.diagnosis or []}
        assert public == {mistake}, (track, public)


# ------------------------------------------------------------------ the words and the grading

def _with_attention(source: str, body: str) -> str:
    start = source.index("def scaled_dot_product_attention")
    end = source.index("\ndef ", start + 5)
    return source[:start] + body + source[end:]


def test_the_docstring_says_what_is_graded_about_the_library_softmax(tmp_path):
    """The docstrings allow the library softmax in attention (only the softmax question
    refuses it) and say that the library attention costs three questions; the grader does
    just that."""
    torch_doc = (ROOT / "student_template" / "attention.py").read_text()
    assert "torch.softmax is allowed\n    here too: only the softmax question refuses it" \
        in torch_doc
    assert "refused here and in the mask and\n    multi_head questions" in torch_doc
    numpy_doc = (ROOT / "student_template" / "attention_numpy.py").read_text()
    assert "scipy.special.softmax is\n    allowed here too" in numpy_doc
    source = (SUBMISSIONS / "correct" / "reference_style.py").read_text()
    path = tmp_path / "attention.py"
    path.write_text(_with_attention(source, (
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(mask, float('-inf'))\n"
        "    weights = torch.softmax(scores, dim=-1)\n"
        "    return weights @ v, weights\n\n")))
    result = check_in_process(load_assignment("attention"), path)
    assert all(q.status == "passed" for q in result.questions.values()), \
        {q.id: question_feedback(q) for q in result.questions.values()}


def test_one_library_attention_call_is_said_to_cost_every_question_it_reaches(grade,
                                                                                tmp_path):
    source = (SUBMISSIONS / "correct" / "reference_style.py").read_text()
    path = tmp_path / "attention.py"
    path.write_text(_with_attention(source, (
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    import torch.nn.functional as F\n"
        "    out = F.scaled_dot_product_attention(q, k, v, "
        "attn_mask=None if mask is None else ~mask)\n"
        "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
        "    if mask is not None:\n"
        "        scores = scores.masked_fill(mask, float('-inf'))\n"
        "    return out, softmax(scores, dim=-1)\n\n")))
    note = ("note: `torch.nn.functional.scaled_dot_product_attention` is refused in every "
            "question whose functions reach it: attention, mask and multi_head; that one call "
            "costs all 3")
    for result in (grade(path, include_hidden=False),
                   check_in_process(load_assignment("attention"), path)):
        for qid in ("attention", "mask", "multi_head"):
            assert result.questions[qid].status == "forbidden call"
            assert note in result.questions[qid].notes, result.questions[qid].notes
        assert not any("is refused in every question" in n
                       for n in result.questions["block"].notes)


def test_a_syntax_error_is_said_once(tmp_path):
    r = cli_in_process("check", "-a", "attention",
                       str(SUBMISSIONS / "broken" / "syntax_error.py"))
    assert r.returncode == 1
    assert r.stdout.count("has a syntax error at line") == 1, r.stdout
    assert re.search(r"^\s+\[ERR \] softmax: 0/\d+ \(error\)$", r.stdout, re.M), r.stdout


def test_check_of_a_folder_is_one_line(tmp_path):
    (tmp_path / "attention.py").write_text("")
    r = cli_in_process("check", str(tmp_path))
    assert r.returncode == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "is a folder: give the path of your .py or .ipynb file" in r.stderr
    assert "attention.py" in r.stderr


def test_check_picks_the_track_from_the_files_functions(tmp_path):
    mine = tmp_path / "mysol.py"
    mine.write_text((SUBMISSIONS / "numpy" / "correct" / "einsum_style.py").read_text())
    r = cli_in_process("check", str(mine))
    assert r.returncode == 0 and "(NumPy): public checks of" in r.stdout, r.stdout + r.stderr
    mine.write_text((SUBMISSIONS / "correct" / "reference_style.py").read_text())
    r = cli_in_process("check", str(mine))
    assert r.returncode == 0 and "(PyTorch): public checks of" in r.stdout, r.stdout
    # Functions that say nothing either way: no assignment is assumed; the one line says how to
    # ask for each.
    mine.write_text("def helper(a):\n    return a\n")
    r = cli_in_process("check", str(mine))
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert "-a attention_numpy" in r.stderr and "-a attention," in r.stderr, r.stderr
