"""Written answers on the platforms that grade a push or an upload (Gradescope, Classroom 50,
GitHub Actions): not in those points (graded by hand later) and said so; a written answer a
grader has already decided counts there like everywhere."""
from __future__ import annotations

import copy

import pytest

from helpers import AUTOGRADED_MAX, SUBMISSIONS

from autograder.platforms.actions.run import outputs, summary_markdown
from autograder.platforms.classroom50.run import release_body, result_document
from autograder.platforms.gradescope.run import to_gradescope
from autograder.model.written_answer import Status
from autograder.written.render import for_ci
from autograder.feedback.contract import submission_json

ANSWERED = (SUBMISSIONS / "correct" / "einsum_style.py").read_text() + \
    '\nwhy_scale = "Large dot products saturate the softmax."\n'


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grade):
    path = tmp_path_factory.mktemp("answered") / "attention.py"
    path.write_text(ANSWERED)
    return grade(path)


def test_gradescope_leaves_pending_answers_out_of_the_points_and_says_so(graded):
    row = submission_json(graded)
    results = to_gradescope(row)
    assert results["score"] == AUTOGRADED_MAX
    assert [t["name"] for t in results["tests"]] == list(graded.questions)
    assert "Written questions (10 points) are graded by hand" in results["output"]
    assert "- why_scale (3 points): answered (6 words)" in results["output"]
    assert "- why_positions (2 points): not answered yet" in results["output"]
    # Graded by hand before the conversion: a test of its own, in the score.
    decided = copy.deepcopy(row)
    decided["questions"]["why_scale"].update(score=2.0, status=Status.GRADED, grader="tess",
                                             feedback="Right about saturation (+1)")
    results = to_gradescope(decided)
    scale = next(t for t in results["tests"] if t["name"] == "why_scale")
    assert (scale["score"], scale["max_score"]) == (2.0, 3.0)
    assert "Right about saturation" in scale["output"]
    assert results["score"] == AUTOGRADED_MAX + 2


def test_classroom50_and_actions_count_the_autograded_points_and_list_the_written(graded):
    result = for_ci(copy.deepcopy(graded))
    assert result.written == {} and result.max_score == AUTOGRADED_MAX
    ident = {"schema": "classroom50/result/v1", "owner": "o", "assignment_type": "individual"}
    doc = result_document(result, ident)
    assert doc["score"] == doc["max-score"] == AUTOGRADED_MAX
    assert not any(t["test-name"].startswith("why_") for t in doc["tests"])
    body = release_body(result, doc, "Attention")
    assert "Written questions (10 points) are graded by hand after the deadline" in body
    assert "why\\_scale (3 points): answered (6 words)" in body
    values = outputs(result, "attention.py")
    assert values["score"] == values["max-score"] == str(AUTOGRADED_MAX)
    assert "graded by hand" in summary_markdown(result, "Attention") + " ".join(result.notes)
