"""The plain GitHub Actions workflow of a student's repository: valid YAML with one grading step,
and that step run as the runner runs it, in the student bundle: `$GITHUB_OUTPUT` stays well
formed whatever the student prints, its per-question outputs (the reporter format) sum to the
points of `autograder grade`, and `$GITHUB_STEP_SUMMARY` gets the per-question table."""
import base64
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import yaml

from helpers import QUESTIONS, SUBMISSIONS, cli_in_process
from autograder.classroom import WORKFLOW_PATH, step_id, workflow_yaml

OUTPUT_LINE = re.compile(r"^([A-Za-z0-9_-]+)=([^\r\n]*)$")


def test_workflow_is_plain_actions_with_one_grading_step_and_caches(assignment):
    wf = yaml.safe_load(workflow_yaml(assignment, assignment_dir="assignments/attention"))
    steps = wf["jobs"]["grade"]["steps"]
    assert not any("autograding-grading-reporter" in str(s.get("uses", "")) for s in steps)
    graders = [s for s in steps if "autograder" in s.get("run", "")]
    assert len(graders) == 1 and "autograder.actions" in graders[0]["run"]
    assert "GITHUB_OUTPUT" not in graders[0]["run"]   # written from Python, not by the shell
    uses = {s.get("uses", "").split("@")[0]: s for s in steps}
    assert uses["actions/setup-python"]["with"]["cache"] == "pip"
    assert "hashFiles('requirements.txt')" in uses["actions/cache"]["with"]["key"]


def parse_outputs(text: str) -> dict[str, str]:
    """$GITHUB_OUTPUT as GitHub reads it: every line `name=value` (no heredoc used here)."""
    values = {}
    for line in text.splitlines():
        m = OUTPUT_LINE.match(line)
        assert m, f"malformed output line: {line[:80]!r}"
        values[m.group(1)] = m.group(2)
    return values


@pytest.fixture(scope="module")
def repo(assignment, tmp_path_factory):
    from autograder.build import build_student

    return build_student(assignment, tmp_path_factory.mktemp("dist"))


def run_grade_step(repo, tmp_path, submission):
    shutil.copy(submission, repo / "attention.py")
    wf = yaml.safe_load((repo / WORKFLOW_PATH).read_text())
    step = next(s for s in wf["jobs"]["grade"]["steps"] if s.get("id") == "grade")
    args = shlex.split(step["run"])
    assert args[0] == "$HOME/.grader-venv/bin/python" and args[1:3] == ["-m", "autograder.actions"]
    out, summary = tmp_path / "github_output", tmp_path / "step_summary"
    out.write_text("earlier=1\n")
    env = {**os.environ, "PYTHONPATH": str(repo), "GITHUB_OUTPUT": str(out),
           "GITHUB_STEP_SUMMARY": str(summary)}
    r = subprocess.run([sys.executable, *args[1:]], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=600)
    return r, parse_outputs(out.read_text()), summary.read_text()


def test_printing_submission_leaves_github_output_well_formed(repo, tmp_path):
    r, values, summary = run_grade_step(repo, tmp_path,
                                        SUBMISSIONS / "hostile" / "fake_score_output.py")
    assert r.returncode == 1, r.stderr           # points missing: the check shows red
    assert values["earlier"] == "1"              # appended, not overwritten
    assert values["score"] == "0" and float(values["max-score"]) > 0
    assert set(values) == {"earlier", "score", "max-score"} | {step_id(q) for q in QUESTIONS}
    assert "100/100" not in r.stdout and "100/100" not in summary
    # The log's feedback sits between ::stop-commands:: markers.
    token = re.search(r"^::stop-commands::(\w+)$", r.stdout, re.M).group(1)
    assert r.stdout.rstrip().endswith(f"::{token}::")


def test_outputs_sum_to_grade_and_summary_names_what_is_wrong(repo, tmp_path):
    sub = SUBMISSIONS / "wrong" / "mask_ignored.py"
    r, values, summary = run_grade_step(repo, tmp_path, sub)
    assert r.returncode == 1, r.stderr
    total = maximum = 0.0
    for q in QUESTIONS:
        data = json.loads(base64.b64decode(values[step_id(q)]))
        assert data["version"] == 1 and data["status"] in ("pass", "fail", "error")
        for t in data["tests"]:
            assert set(t) >= {"name", "status", "score", "message", "test_code", "filename",
                              "line_no", "duration"}
        total += sum(t["score"] for t in data["tests"])
        maximum += data["max_score"]
    out = tmp_path / "g.json"
    assert cli_in_process("grade", "-a", "attention", str(sub), "--public-only", "--json",
                          str(out)).returncode == 0
    graded = json.loads(out.read_text())["submissions"][0]
    assert total == graded["score"] == float(values["score"])
    assert maximum == graded["max_score"]
    assert 0 < total < maximum
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(QUESTIONS)
    mask = next(line for line in rows if line.startswith("| mask "))
    assert "blocked positions" in mask


def test_correct_submission_passes(repo, tmp_path):
    r, values, summary = run_grade_step(repo, tmp_path,
                                        SUBMISSIONS / "correct" / "einsum_style.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert values["score"] == values["max-score"]
