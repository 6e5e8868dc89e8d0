"""Checks computed in the worker cannot be switched off: submissions that patch the engine in
their worker are flagged and (by default) get no points; shortcuts the worker cannot see are
still forbidden calls; missing gradients fail a case."""
import csv
import dataclasses
import json

import pytest

from helpers import QUESTIONS, SUBMISSIONS

from autograder.assignment import AssignmentError
from autograder.feedback import submission_text
from autograder.integrity import tamper_policy
from autograder.report import write_reports
from autograder.results import submission_from_json
from autograder.static_scan import INTEGRITY_MESSAGE

HOSTILE = SUBMISSIONS / "hostile"
MAX = {"softmax": 6, "attention": 6, "mask": 6, "split_heads": 5, "multi_head": 6, "block": 6}


@pytest.fixture(scope="module")
def flag_only(assignment):
    """The same assignment with `[integrity] on_tamper = "flag"`."""
    return dataclasses.replace(assignment, config={**assignment.config,
                                                   "integrity": {"on_tamper": "flag"}})


@pytest.fixture(scope="module")
def grade_flag_only(flag_only, sandbox):
    from autograder.grade import grade_submission

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
    row = result.to_json()
    assert row["integrity"] and all(f["kind"] == "tamper" and f["line"] > 0
                                    for f in row["integrity"])
    assert row["integrity_review"] == {"on_tamper": "zero", "questions": QUESTIONS,
                                       "score_without_penalty": 29.0}


# ------------------------------------------------------------------ flag only: grades stand

def test_flag_only_keeps_grades_and_the_static_scan_still_forbids(grade_flag_only):
    """The patch cannot switch the dispatcher's refusal off: the run itself is hard evidence
    of the library softmax, and the row is still flagged for the patch."""
    result = grade_flag_only(HOSTILE / "patch_engine_hides_forbidden_call.py")
    assert scores(result) == full_except(softmax=(0.0, "forbidden call"))
    feedback = result.questions["softmax"].feedback()
    assert "softmax called `torch.nn.functional.softmax`" in feedback
    assert result.notes[0].startswith(INTEGRITY_MESSAGE)
    assert result.to_json()["integrity_review"]["on_tamper"] == "flag"


def test_forged_missing_gradients_fail_the_cases_that_ask_for_them(grade_flag_only):
    result = grade_flag_only(HOSTILE / "forge_missing_gradients.py")
    assert scores(result) == full_except(softmax=(0.0, "failed"))
    for c in result.questions["softmax"].cases:
        assert c.status == "failed" and c.kind == "gradient"
        # The engine is no longer in sys.modules, so the forgery itself fails: the gradient
        # that is truly missing (softmax detaches) is what the case reports.
        assert "no gradient" in c.message and "softmax" in c.message


def test_a_shortcut_only_the_source_shows_is_a_forbidden_call(grade):
    result = grade(HOSTILE / "getattr_strings_hidden_softmax.py")
    assert scores(result) == full_except(softmax=(0.0, "forbidden call"))
    feedback = result.questions["softmax"].feedback()
    assert "getattr(_FUNCTIONAL, _NAME)" in feedback and "line 79" in feedback
    assert "torch.nn.functional.softmax" in feedback
    assert not result.integrity and "integrity" not in result.to_json()


# ------------------------------------------------------------------ which questions it costs

def test_tampering_inside_one_function_costs_the_questions_from_its_first_call(grade, tmp_path):
    """layer_norm scans the heap; it is first called while `block` is graded, so the
    questions graded before keep their points."""
    src = (HOSTILE / "honest.py").read_text().replace(
        "def _layer_norm(x, gamma, beta, eps=1e-5):\n",
        "def _layer_norm(x, gamma, beta, eps=1e-5):\n    import gc\n"
        "    len(gc.get_objects())\n")
    path = tmp_path / "attention.py"
    path.write_text(src)
    result = grade(path)
    assert scores(result) == full_except(block=(0.0, "integrity"))
    # The audit hook refused the heap scan as it happened: without the scan's penalty, block
    # still has nothing (hard evidence), and the row names the escape.
    assert result.to_json()["integrity_review"] == {
        "on_tamper": "zero", "questions": ["block"], "score_without_penalty": 29.0,
        "escapes": ["listing the interpreter's objects (gc.get_objects, get_referrers, "
                    "get_referents)"]}


# ------------------------------------------------------------------ what the instructor sees

def test_the_flag_reaches_the_terminal_the_feedback_files_and_the_report(grade, assignment,
                                                                          tmp_path):
    result = grade(HOSTILE / "patch_engine_hides_forbidden_call.py")
    result.student = "mallory"
    assert INTEGRITY_MESSAGE in submission_text(result)
    assert "[FLAG] softmax: 0/6 (integrity)" in submission_text(result)
    honest = grade(HOSTILE / "honest.py")
    honest.student = "alice"
    files = write_reports(tmp_path, assignment, [result, honest])
    assert INTEGRITY_MESSAGE in (tmp_path / "feedback" / "mallory.md").read_text()
    assert "integrity" not in (tmp_path / "feedback" / "alice.md").read_text()
    rows = {r["student"]: r for r in csv.DictReader(files["csv"].open())}
    assert rows["mallory"]["status"] == "integrity" and rows["mallory"]["total"] == "0"
    assert rows["alice"]["status"] == "graded" and rows["alice"]["total"] == "35"
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

    from autograder import checks
    from autograder.checks import Labels

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

    from autograder.assignment import load_assignment

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
