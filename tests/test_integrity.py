"""Points are withheld only on hard evidence: a submission that stores into the engine's own
modules (the scan's proof) gets no points by default; what the scan only doubts (a shortcut it
sees but the run-time check did not, a name it cannot resolve, a file over its budget) flags the
row for the instructor's review and costs nothing; missing gradients fail a case."""
import csv
import dataclasses
import json

import pytest

from helpers import AUTOGRADED_MAX, QUESTIONS, SUBMISSIONS, max_points

from autograder.model.assignment import AssignmentError
from autograder.feedback.terminal import submission_text
from autograder.grading.integrity import tamper_policy
from autograder.course.report import write_reports
from autograder.model.results import submission_from_json
from autograder.static_scan import INTEGRITY_MESSAGE
from autograder.feedback.plain import question_feedback
from autograder.feedback.contract import submission_json

HOSTILE = SUBMISSIONS / "hostile"
MAX = {q: max_points(q) for q in QUESTIONS}     # from the question files


@pytest.fixture(scope="module")
def flag_only(assignment):
    """The same assignment with `[integrity] on_tamper = "flag"`."""
    return dataclasses.replace(assignment, config={**assignment.config,
                                                   "integrity": {"on_tamper": "flag"}})


@pytest.fixture(scope="module")
def grade_flag_only(flag_only, sandbox):
    from autograder.grading.grade import grade_submission

    return lambda path: grade_submission(flag_only, path, sandbox)


def scores(result) -> dict:
    return {q: (r.score, r.status) for q, r in result.questions.items()}


def full_except(**changed) -> dict:
    return {q: changed.get(q, (float(MAX[q]), "passed")) for q in QUESTIONS}


ALL_INTEGRITY = {q: (0.0, "integrity") for q in QUESTIONS}


# ------------------------------------------------------------------ default: no points

@pytest.mark.parametrize("name", ["patch_engine_hides_forbidden_call.py",
                                  "forge_missing_gradients.py"])
def test_patching_the_engine_at_import_costs_every_question(grade, name):
    result = grade(HOSTILE / name)
    assert scores(result) == ALL_INTEGRITY
    for q in result.questions.values():
        assert all(c.status == "integrity" and c.message == INTEGRITY_MESSAGE for c in q.cases)
    assert result.notes[0].startswith(INTEGRITY_MESSAGE)
    assert "autograder.sandbox." in result.notes[0]   # says what was touched, and where
    row = submission_json(result)
    assert row["integrity"][0]["kind"] == "tamper"
    assert row["integrity"][0]["rule"] == "engine-store"
    assert all(f["kind"] in ("tamper", "review") and f["line"] > 0 for f in row["integrity"])
    review = row["integrity_review"]
    assert {k: v for k, v in review.items() if k != "score_without_penalty"} == {
        "on_tamper": "zero", "evidence": "hard", "questions": QUESTIONS}
    # What run time gave: everything but softmax, which the dispatcher refuses (the patch
    # cannot switch it off) or whose gradients are missing (forge_missing_gradients).
    assert review["score_without_penalty"] == sum(MAX.values()) - MAX["softmax"]


# ------------------------------------------------------------------ flag only: grades stand

def test_flag_only_keeps_grades_and_the_dispatcher_still_forbids(grade_flag_only):
    """The patch cannot switch the dispatcher's refusal off: the run itself is hard evidence
    of the library softmax, and the row is still flagged for the patch."""
    result = grade_flag_only(HOSTILE / "patch_engine_hides_forbidden_call.py")
    assert scores(result) == full_except(softmax=(0.0, "forbidden call"))
    feedback = question_feedback(result.questions["softmax"])
    assert "softmax called `torch.nn.functional.softmax`" in feedback
    assert result.notes[0].startswith(INTEGRITY_MESSAGE)
    review = submission_json(result)["integrity_review"]
    assert review["on_tamper"] == "flag" and review["evidence"] == "hard"
    assert review["score_without_penalty"] == result.score


def test_forged_missing_gradients_fail_the_cases_that_ask_for_them(grade_flag_only):
    result = grade_flag_only(HOSTILE / "forge_missing_gradients.py")
    assert scores(result) == full_except(softmax=(0.0, "failed"))
    for c in result.questions["softmax"].cases:
        assert c.status == "failed" and c.kind == "gradient"
        # The engine is no longer in sys.modules, so the forgery itself fails: the gradient
        # that is truly missing (softmax detaches) is what the case reports.
        assert "no gradient" in c.message and "softmax" in c.message


def test_a_shortcut_only_the_source_shows_is_refused_where_it_runs(grade):
    """The getattr strings reach the library softmax with torch-function handling disabled:
    the dispatcher refuses the operator itself (a forbidden call, never a plain pass), the
    feedback points at the lines of the source that hide it, and no integrity penalty or flag
    is added for what the run already proved."""
    path = HOSTILE / "getattr_strings_hidden_softmax.py"
    result = grade(path)
    row = submission_json(result)
    assert scores(result) == full_except(softmax=(0.0, "forbidden call"))
    feedback = question_feedback(result.questions["softmax"])
    lines = path.read_text().splitlines()
    route = next(i for i, text in enumerate(lines, 1) if "getattr(_FUNCTIONAL, _NAME)" in text)
    assert f"line {route}: `getattr(_FUNCTIONAL, _NAME)` reaches " \
        "`torch.nn.functional.softmax`" in feedback
    assert "softmax called `torch.nn.functional.softmax`" in feedback
    assert "integrity" not in row and "integrity_review" not in row


SEEN_NOT_RUN = """
def softmax(x, dim=-1):
    if x.dim() > 16:                # never true for the grader's inputs
        return F.softmax(x, dim=dim)
    return _softmax(x, dim)
"""


def test_a_shortcut_seen_but_never_run_keeps_its_points_and_is_flagged(grade, assignment,
                                                                       tmp_path):
    """Exact outcome: the run-time check saw no library softmax (the branch never runs), so the
    question passes; the scan's sighting flags the row for review everywhere it is shown."""
    src = (HOSTILE / "honest.py").read_text().replace(
        "def softmax(x, dim=-1):\n    return _softmax(x, dim)\n",
        "import torch.nn.functional as F\n" + SEEN_NOT_RUN)
    assert "x.dim() > 16" in src
    path = tmp_path / "attention.py"
    path.write_text(src)
    result = grade(path)
    assert scores(result) == full_except()
    assert "flagged for review" in question_feedback(result.questions["softmax"])
    row = submission_json(result)
    assert [(f["kind"], f["rule"], f["question"]) for f in row["integrity"]] == [
        ("review", "library", "softmax")]
    assert row["integrity_review"] == {"on_tamper": "zero", "evidence": "review",
                                       "questions": [],
                                       "score_without_penalty": float(AUTOGRADED_MAX)}
    result.student = "sam"
    assert submission_text(result).splitlines()[0].endswith("[FLAG: flagged for review]")
    files = write_reports(tmp_path / "out", assignment, [result])
    rows = list(csv.DictReader(files["csv"].open()))
    assert rows[0]["status"] == "review" and rows[0]["total"] == str(AUTOGRADED_MAX)


# ------------------------------------------------------------------ which questions it costs

def test_tampering_inside_one_function_costs_the_questions_from_its_first_call(grade, tmp_path):
    """layer_norm stores into the engine; it is first called while `block` is graded, so the
    questions graded before keep their points."""
    src = (HOSTILE / "honest.py").read_text().replace(
        "def _layer_norm(x, gamma, beta, eps=1e-5):\n",
        "def _layer_norm(x, gamma, beta, eps=1e-5):\n    import sys\n"
        "    engine = sys.modules.get('autograder.sandbox.worker')\n"
        "    if engine is not None:\n        engine.probe = 1\n")
    path = tmp_path / "attention.py"
    path.write_text(src)
    result = grade(path)
    assert scores(result) == full_except(block=(0.0, "integrity"))
    # The store is proven by the scan (engine modules are out of the worker's sys.modules, so at
    # run time it changes nothing): without the penalty the row would have had full marks.
    assert submission_json(result)["integrity_review"] == {
        "on_tamper": "zero", "evidence": "hard", "questions": ["block"],
        "score_without_penalty": float(AUTOGRADED_MAX)}


# ------------------------------------------------------------------ what the instructor sees

def test_the_flag_reaches_the_terminal_the_feedback_files_and_the_report(grade, assignment,
                                                                          tmp_path):
    result = grade(HOSTILE / "patch_engine_hides_forbidden_call.py")
    result.student = "mallory"
    assert INTEGRITY_MESSAGE in submission_text(result)
    assert f"[FLAG] softmax: 0/{max_points('softmax'):g} (integrity)" in submission_text(result)
    honest = grade(HOSTILE / "honest.py")
    honest.student = "alice"
    files = write_reports(tmp_path, assignment, [result, honest])
    assert INTEGRITY_MESSAGE in (tmp_path / "feedback" / "mallory.md").read_text()
    assert "integrity" not in (tmp_path / "feedback" / "alice.md").read_text()
    rows = {r["student"]: r for r in csv.DictReader(files["csv"].open())}
    assert rows["mallory"]["status"] == "integrity" and rows["mallory"]["total"] == "0"
    assert rows["alice"]["status"] == "graded" and rows["alice"]["total"] == str(AUTOGRADED_MAX)
    assert INTEGRITY_MESSAGE in files["html"].read_text()
    data = json.loads(files["json"].read_text())
    flagged = [s for s in data["submissions"] if s.get("integrity")]
    assert [s["student"] for s in flagged] == ["mallory"]
    again = submission_from_json(flagged[0])
    assert again.integrity == result.integrity and again.score == 0


def test_on_tamper_must_be_zero_or_flag(assignment):
    assert tamper_policy(assignment) == "zero"
    wrong = dataclasses.replace(assignment, config={**assignment.config,
                                                    "integrity": {"on_tamper": "warn"}})
    with pytest.raises(AssignmentError, match="on_tamper"):
        tamper_policy(wrong)


def test_missing_gradients_are_a_failure_never_a_skip():
    import torch

    from autograder.checking import checks
    from autograder.checking.checks import Labels

    labels = Labels("attn", ["q", "k", "v"])
    exp = {"0/0": torch.ones(2), "0/1": torch.ones(2)}
    [p] = checks.compare_gradients(exp, None, None, labels)
    assert p.kind == "gradient" and "no gradients came back from attn" in p.public
    [p] = checks.compare_gradients(exp, {"0/0": torch.ones(2)}, None, labels)
    assert p.public == "no gradient came back for `k`, so the gradient check could not be made"
    assert checks.compare_gradients(exp, {"0/0": torch.ones(2), "0/1": torch.ones(2)}, None,
                                    labels) == []


def test_a_wrong_on_tamper_is_refused_when_the_assignment_loads(tmp_path):
    import shutil

    from autograder.model.assignment import load_assignment

    from helpers import ROOT

    root = tmp_path / "assignments" / "copy"
    shutil.copytree(ROOT / "assignments" / "attention", root)
    shutil.copytree(ROOT / "student_template", tmp_path / "student_template")
    toml = root / "assignment.toml"
    toml.write_text(toml.read_text() + '\n[integrity]\non_tamper = "warn"\n')
    with pytest.raises(AssignmentError, match="on_tamper"):
        load_assignment(str(root))
    toml.write_text(toml.read_text().replace('"warn"', '"flag"'))
    load_assignment.cache_clear()
    assert tamper_policy(load_assignment(str(root))) == "flag"


def test_refusals_that_cannot_be_installed_withhold_the_points(tmp_path):
    """Fail closed in `grade`: a question whose refusals the worker could not install (here a
    forbidden name no process can replace: a method of `str`, which is immutable) is not
    graded. Its points are withheld with the reason, every question sharing the worker's
    refusals likewise, the row is flagged for review, and a question forbidding nothing is
    graded as usual."""
    from helpers import cli_in_process, copy_assignment

    folder = copy_assignment(tmp_path / "attention-unarmed")
    block = folder / "tests" / "block.py"
    text = block.read_text()
    assert '"autograd.NativeLayerNormBackward0"]' in text
    block.write_text(text.replace('"autograd.NativeLayerNormBackward0"]',
                                  '"autograd.NativeLayerNormBackward0", "builtins.str.join"]'))
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "alice" / "attention.py").write_bytes(
        (SUBMISSIONS / "correct" / "reference_style.py").read_bytes())
    r = cli_in_process("grade", "-a", str(folder), str(tmp_path / "class"), "--json",
                       str(tmp_path / "grades.json"))
    assert r.returncode == 4, r.stdout + r.stderr      # a row needs the instructor
    row = json.loads((tmp_path / "grades.json").read_text())["submissions"][0]
    armed = [q for q in QUESTIONS if q != "split_heads"]     # split_heads forbids nothing
    for qid in armed:
        q = row["questions"][qid]
        assert (q["status"], q["score"]) == ("error", 0), (qid, q)
        assert "could not install its check of forbidden routines" in q["feedback"]
        assert "a forbidden library function could not be replaced" in q["feedback"]
    assert row["questions"]["split_heads"]["status"] == "passed"
    assert row["score"] == MAX["split_heads"]
    review = row["integrity_review"]
    assert review["evidence"] == "review" and sorted(review["unarmed"]) == sorted(armed)
