"""Realistic wrong submissions lose points on the right questions, with useful feedback;
legitimately different correct solutions keep full marks."""
import re

import pytest

from helpers import QUESTIONS, SUBMISSIONS, assert_loses_and_keeps, id_list, read_header
from autograder.feedback.plain import question_feedback
from autograder.feedback.contract import submission_json

WRONG = sorted((SUBMISSIONS / "wrong").glob("*.py"))
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))

# Words the feedback must contain for mistakes the engine names generically (issue-level
# diagnosis of specific misconceptions is separate).
GENERIC_WORDS = {"nan": "NaN", "gradient": "gradient", "dtype": "dtype", "bool": "bool",
                 "tuple": "tuple", "in place": "in place", "forbidden": "write yourself",
                 "shape": "shape", "contiguous": "view", "sum": "sum to"}


def test_corpus_is_large_enough():
    assert len(WRONG) >= 24 and len(CORRECT) >= 13
    covered = set()
    for f in WRONG:
        covered |= set(id_list(read_header(f)["loses"]))
    assert covered == set(QUESTIONS)


@pytest.fixture(scope="module")
def graded(corpus_results):
    return corpus_results        # graded once for the suite (conftest.py)


@pytest.mark.parametrize("path", WRONG, ids=lambda p: p.stem)
def test_wrong_submission_loses_the_right_questions(path, graded):
    header = read_header(path)
    result = graded[path.name]
    loses = assert_loses_and_keeps(result, header, QUESTIONS)
    first = result.questions[loses[0]]
    hint = header.get("hint", "").lower()
    if hint in GENERIC_WORDS:
        assert GENERIC_WORDS[hint].lower() in question_feedback(first).lower() or \
            first.status == "forbidden call", question_feedback(first)


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_other_correct_solutions_keep_full_marks(path, graded):
    result = graded[path.name]
    for q in result.questions.values():
        assert q.status == "passed", f"{path.name} {q.id}: {question_feedback(q)}"
        assert not q.notes, f"{path.name} {q.id}: {q.notes}"
    # ... and no flag: honest idioms (a __main__ demo block, getattr(F, activation), gc,
    # inspect, functools, operator, seeds, warnings) are never sent for review.
    assert not result.integrity and result.integrity_review is None, result.integrity
    assert not any(n.startswith("integrity:") for n in result.notes), result.notes
    assert "integrity" not in submission_json(result)


def test_the_honest_idioms_of_issue_21_are_in_the_corpus():
    text = "\n".join(p.read_text() for p in CORRECT)
    for idiom in ("getattr(F, activation)", 'activation="relu"', "sys.modules[__name__]",
                  "gc.collect()", "inspect.signature(fn)", "functools.partial",
                  "operator.itemgetter", 'if __name__ == "__main__":', "plt.show()",
                  "torch.manual_seed", "warnings.filterwarnings"):
        assert idiom in text, idiom


def test_forbidden_call_is_its_own_status(graded):
    r = graded["softmax_calls_torch_softmax.py"]
    assert r.questions["softmax"].status == "forbidden call"
    assert "torch.softmax" in question_feedback(r.questions["softmax"]) or \
        "softmax" in question_feedback(r.questions["softmax"])
    assert r.questions["attention"].status == "passed"  # allowed outside the softmax question


def test_hidden_feedback_never_quotes_expected_values(graded):
    """A failing hidden case says what kind of thing is wrong (shape, dtype, values, gradient)
    but never a value of the hidden expected result, nor where in it the difference is."""
    failing = [c for result in graded.values() for q in result.questions.values()
               for c in q.cases if c.hidden and c.status != "passed"]
    kinds = {c.kind for c in failing}
    assert {"values", "shape"} <= kinds, kinds     # the corpus exercises the messages at risk
    for c in failing:
        if c.status == "error":
            continue        # the student's own exception, quoted: their words, not the grader's
        assert "(at index" not in c.message, c.message
        assert not re.search(r"expected:? -?\d", c.message), c.message


def test_dependency_is_named(graded):
    r = graded["softmax_sums_over_all_elements.py"]
    notes = question_feedback(r.questions["attention"])
    assert "softmax" in notes and "question 'softmax'" in notes


def test_grading_twice_gives_identical_results(grade):
    path = SUBMISSIONS / "wrong" / "attention_divides_by_dk.py"
    a, b = submission_json(grade(path)), submission_json(grade(path))
    a.pop("seconds"), b.pop("seconds")
    assert a == b
