"""The command line as students and instructors use it."""
import json
import shutil

from helpers import QUESTIONS, ROOT, SUBMISSIONS, run_cli


def test_student_check_of_the_template(tmp_path):
    shutil.copy(ROOT / "student_template" / "attention.py", tmp_path / "attention.py")
    r = run_cli("check", "attention.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.count("not attempted") == len(QUESTIONS)
    assert "hidden" not in r.stdout.replace("Hidden cases are graded", "")


def test_student_check_of_a_wrong_file_names_the_problem(tmp_path):
    shutil.copy(SUBMISSIONS / "wrong" / "causal_mask_float.py", tmp_path / "attention.py")
    r = run_cli("check", str(tmp_path / "attention.py"))
    assert r.returncode == 1
    assert "expected dtype bool, got float32" in r.stdout
    assert "[PASS] softmax" in r.stdout


def test_student_check_needs_no_reference(tmp_path):
    """Public checks run from snapshots: hide the reference and they still pass."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "autograder", project / "autograder")
    shutil.copytree(ROOT / "assignments", project / "assignments")
    shutil.copytree(ROOT / "student_template", project / "student_template")
    shutil.copy(ROOT / "reference" / "attention.py", tmp_path / "attention.py")
    r = run_cli("check", str(tmp_path / "attention.py"), cwd=project,
                env={"PYTHONPATH": str(project)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All public checks pass" in r.stdout


def test_grade_json_contract(tmp_path):
    out = tmp_path / "results.json"
    r = run_cli("grade", "-a", "attention", str(SUBMISSIONS / "correct" / "einsum_style.py"),
                str(SUBMISSIONS / "broken"), "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["assignment"] == "attention"
    paths = [s["path"] for s in data["submissions"]]
    assert len(paths) == 1 + len(list((SUBMISSIONS / "broken").glob("*.py")))
    for s in data["submissions"]:
        assert set(s) >= {"path", "score", "max_score", "error", "questions"}
        assert list(s["questions"]) == QUESTIONS
        for q in s["questions"].values():
            assert set(q) >= {"score", "max_score", "status", "feedback"}
            assert isinstance(q["feedback"], str)
    first = data["submissions"][0]
    assert first["score"] == first["max_score"] == 35
    assert "sandbox:" in r.stdout


def test_unknown_assignment_is_a_clear_error():
    r = run_cli("grade", "-a", "nope", str(SUBMISSIONS / "correct"))
    assert r.returncode == 2 and "no assignment 'nope'" in r.stderr
