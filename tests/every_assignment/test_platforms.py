"""Every assignment of assignments/ on the platforms that grade it, from one build per
assignment (`built_assignment`): Gradescope's `run_autograder`, Classroom 50's `autograder.py`
in a checkout, the GitHub Actions grading step and `otter run`, each given a submission that
loses points and agreeing with `autograder grade` (every case, or the public ones where the
platform runs only those)."""
import base64
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml

from helpers import (assignments_for, autograded_scores, load_json, losing_submission,
                     run_workflow_step)

from autograder.model.assignment import load_assignment
from autograder.platforms.actions.reporter import step_id



@pytest.mark.slow
@pytest.mark.parametrize("name", assignments_for("gradescope"))
def test_gradescope_gives_what_grade_gives(name, built_assignment, graded, tmp_path):
    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(built_assignment(name) / f"{name}-gradescope.zip") as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():   # zipfile drops permissions; Gradescope keeps them
            if info.external_attr >> 16:
                os.chmod(root / "source" / info.filename, info.external_attr >> 16)
    wrong = losing_submission(name)
    shutil.copy(wrong, root / "submission" / load_assignment(name).student_file)
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    results = load_json(root / "results" / "results.json")
    mine = graded(name, wrong)
    tests = {t["name"]: t for t in results["tests"]}
    for qid, (score, top) in autograded_scores(mine).items():
        assert (tests[qid]["score"], tests[qid]["max_score"]) == (score, top), qid
    assert results["score"] == sum(s for s, _ in autograded_scores(mine).values())


CLASSROOM50_ENV = {
    "CLASSROOM": "course-2026", "SUBMISSION_TAG": "submit/20261130T010203Z-abc1234",
    "COMMIT_URL": "https://github.com/o/r/commit/abc",
    "RELEASE_URL": "https://github.com/o/r/releases/tag/submit%2F1",
    "REVIEW_URL": "https://github.com/o/r/compare/a...b", "USERNAME": "student1",
    "OWNER": "student1", "ASSIGNMENT_TYPE": "individual"}


@pytest.mark.parametrize("name", assignments_for("classroom50"))
def test_classroom50_gives_the_public_grade(name, built_assignment, graded, tmp_path):
    from platforms.test_classroom50 import RESULT_V1

    assignment = load_assignment(name)
    repo = tmp_path / "repo"
    repo.mkdir()
    wrong = losing_submission(name)
    shutil.copy(wrong, repo / assignment.student_file)
    git = ["git", "-c", "user.name=s", "-c", "user.email=s@example.org", "-C", str(repo)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "work"], check=True)
    runtime = tmp_path / "runtime" / name
    shutil.copytree(built_assignment(name) / f"{name}-classroom50", runtime)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CLASSROOM50_ENV, ASSIGNMENT=name, CLASSROOM50_BUNDLE_DIR=str(runtime),
               CLASSROOM50_NO_INSTALL="1")
    r = subprocess.run([sys.executable, str(runtime / "autograder.py")], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((repo / "result.json").read_text())
    jsonschema.validate(doc, RESULT_V1)
    public = graded(name, wrong, public_only=True)
    rows = {t["test-name"].split(" (public cases", 1)[0]: t for t in doc["tests"]}
    for qid, (score, top) in autograded_scores(public).items():
        assert (rows[qid]["score"], rows[qid]["max-score"]) == (round(score), round(top)), qid
    assert doc["score"] == sum(t["score"] for t in doc["tests"])


@pytest.mark.parametrize("name", assignments_for("actions"))
def test_the_actions_step_gives_the_public_grade(name, built_assignment, graded, tmp_path):
    assignment = load_assignment(name)
    repo = tmp_path / "repo"
    shutil.copytree(built_assignment(name) / f"{name}-student", repo)
    wrong = losing_submission(name)
    shutil.copy(wrong, repo / assignment.student_file)
    wf = yaml.safe_load((repo / ".github" / "workflows" / "classroom.yml").read_text())
    step = next(s for s in wf["jobs"]["grade"]["steps"] if s.get("id") == "grade")
    out = tmp_path / "github_output"
    r = run_workflow_step(step["run"], repo, tmp_path, {"GITHUB_OUTPUT": str(out)})
    public = graded(name, wrong, public_only=True)
    assert r.returncode == (0 if public.score == sum(
        q.max_score for q in public.questions.values()) else 1), r.stdout + r.stderr
    values = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    for qid, (score, top) in autograded_scores(public).items():
        data = json.loads(base64.b64decode(values[step_id(qid)]))
        assert sum(t["score"] for t in data["tests"]) == score and data["max_score"] == top, qid
    assert float(values["score"]) == public.score


@pytest.mark.slow
@pytest.mark.parametrize("name", assignments_for("otter"))
def test_otter_run_gives_what_grade_gives(name, built_assignment, graded, tmp_path):
    assignment = load_assignment(name)
    wrong = losing_submission(name)
    target = tmp_path / assignment.student_file
    shutil.copy(wrong, target)
    r = subprocess.run([str(Path(sys.executable).parent / "otter"), "run", "-a",
                        str(built_assignment(name) / f"{name}-otter.zip"), "-o", str(tmp_path),
                        "--no-logo", str(target)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    tests = {t["name"]: t for t in load_json(tmp_path / "results.json")["tests"]}
    for qid, (score, top) in autograded_scores(graded(name, wrong)).items():
        assert (tests[qid]["score"], tests[qid]["max_score"]) == (score, top), qid


