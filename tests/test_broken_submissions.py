"""Submissions that cannot run normally still get a row with a clear message."""
from helpers import QUESTIONS, SUBMISSIONS
from autograder.feedback.plain import question_feedback

BROKEN = SUBMISSIONS / "broken"


def _all_cases(result):
    return [c for q in result.questions.values() for c in q.cases]


def test_syntax_error(grade):
    r = grade(BROKEN / "syntax_error.py")
    assert r.score == 0 and list(r.questions) == QUESTIONS
    assert "syntax error at line 4" in r.error
    assert "def softmax(x, dim=-1)" in r.error
    assert {q.status for q in r.questions.values()} == {"error"}


def test_import_error_names_the_module_and_line(grade):
    r = grade(BROKEN / "import_error.py")
    assert r.score == 0
    assert "ModuleNotFoundError" in r.error and "einops_not_installed_anywhere" in r.error
    assert "line 2" in r.error


def test_runtime_error_at_import(grade):
    r = grade(BROKEN / "runtime_error_at_import.py")
    assert "line 3" in r.error and "my_weights.pt" in r.error


def test_missing_functions(grade):
    r = grade(BROKEN / "missing_functions.py")
    assert r.error is None
    assert r.questions["softmax"].status == "passed"
    fb = question_feedback(r.questions["attention"])
    assert "`scaled_dot_product_attention` is not defined" in fb
    assert "scaled_dot_product_attention(q, k, v, mask=None)" in fb


def test_wrong_signatures(grade):
    r = grade(BROKEN / "wrong_signatures.py")
    assert r.questions["softmax"].score > 0  # cases that do not pass dim still work
    fb = question_feedback(r.questions["softmax"])
    assert "dim" in fb and "softmax(x, dim=-1)" in fb
    assert "is a Tensor, not a function" in question_feedback(r.questions["mask"])
    assert "mask" in question_feedback(r.questions["mask"])


def test_not_utf8_and_empty_files(grade):
    r = grade(BROKEN / "not_utf8.py")
    assert "not UTF-8" in r.error and r.score == 0
    r = grade(BROKEN / "empty.py")
    assert r.error is None and r.score == 0
    assert all("is not defined" in c.message for c in _all_cases(r))


def test_missing_file(grade, tmp_path):
    r = grade(tmp_path / "nope.py")
    assert "not found" in r.error and r.score == 0
