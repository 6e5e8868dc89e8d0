"""On Gradescope a submission flagged for the instructor's review keeps its grade: `grade`
exits with status 4 for such a row (every row graded, one needs the instructor), which the
Gradescope wrapper reads as graded, not as a grader that failed."""
import json
import re

from helpers import AUTOGRADED_MAX, QUESTIONS, SUBMISSIONS, WRITTEN_MAX, cases_of

from autograder.platforms.gradescope import run as gradescope
from autograder.feedback.totals import out_of

UNREACHED = """
def softmax(x, dim=-1):
    if x.dim() > 16:                # never true for the grader's inputs
        return F.softmax(x, dim=dim)
    return _softmax(x, dim)
"""


def test_a_row_flagged_for_review_keeps_its_grade(tmp_path):
    src = (SUBMISSIONS / "hostile" / "honest.py").read_text().replace(
        "def softmax(x, dim=-1):\n    return _softmax(x, dim)\n",
        "import torch.nn.functional as F\n" + UNREACHED)
    assert "x.dim() > 16" in src
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "attention.py").write_text(src)
    results = gradescope.run(root, "attention")
    assert results["score"] == AUTOGRADED_MAX, results["output"][:500]
    assert "flagged for review" in results["output"]
    assert "failed before it could grade" not in results["output"]
    assert json.loads((root / "results" / "results.json").read_text()) == results
    # Before grades are published students see no total and no hidden points: every question
    # with hidden cases (all of this assignment's) waits for publishing, which Gradescope's
    # specification says also hides the total score; the always-visible output counts public
    # cases, never points.
    assert {t["visibility"] for t in results["tests"]} == {"after_published"}
    hidden = sum(c.points for q in QUESTIONS for c in cases_of(q) if c.hidden)
    # It says what the grade is out of (the same for every student), never a score.
    said = f"The grade is out of {out_of(AUTOGRADED_MAX, WRITTEN_MAX)}."
    assert said in results["output"]
    rest = results["output"].replace(said, "")
    assert hidden > 0 and not re.search(rf"\b({AUTOGRADED_MAX}|{hidden:g})\b", rest)
