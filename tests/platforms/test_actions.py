"""The plain GitHub Actions workflow of a student's repository: valid YAML with one grading step,
and that step run as the runner runs it, in the student bundle: `$GITHUB_OUTPUT` stays well
formed whatever the student prints, its per-question outputs (the reporter format) sum to the
points of `autograder grade`, and `$GITHUB_STEP_SUMMARY` gets the per-question table."""
import base64
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from helpers import (QUESTIONS, SUBMISSIONS, WRITTEN_MAX, cli_in_process, run_workflow_step)
from hostile_names import (FORMAT_ANSWER, FORMAT_MESSAGE_SHOWN, FORMAT_RAISE, FORMAT_RAW,
                           forger_source)
from autograder.platforms.actions.run import WORKFLOW_PATH, workflow_yaml
from autograder.platforms.actions.reporter import step_id

TEMPLATE = SUBMISSIONS.parent.parent / "student_template" / "attention.py"
OUTPUT_LINE = re.compile(r"^([A-Za-z0-9_-]+)=([^\r\n]*)$")


def test_workflow_is_plain_actions_with_one_grading_step_and_caches(assignment):
    wf = yaml.safe_load(workflow_yaml(assignment, assignment_dir="assignments/attention"))
    steps = wf["jobs"]["grade"]["steps"]
    assert not any("autograding-grading-reporter" in str(s.get("uses", "")) for s in steps)
    graders = [s for s in steps if "autograder" in s.get("run", "")]
    assert len(graders) == 1 and "autograder.platforms.actions" in graders[0]["run"]
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
    from autograder.platforms.build import build_student

    return build_student(assignment, tmp_path_factory.mktemp("dist"))


def run_grade_step(repo, tmp_path, submission):
    """The workflow's grading step, run by bash in the checkout as the runner runs it: its
    venv's python (here a stand-in for this interpreter), RUNNER_TEMP, the two output files."""
    shutil.copy(submission, repo / "attention.py")
    wf = yaml.safe_load((repo / WORKFLOW_PATH).read_text())
    step = next(s for s in wf["jobs"]["grade"]["steps"] if s.get("id") == "grade")
    out, summary = tmp_path / "github_output", tmp_path / "step_summary"
    out.write_text("earlier=1\n")
    r = run_workflow_step(step["run"], repo, tmp_path,
                          {"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)})
    return r, parse_outputs(out.read_text()), summary.read_text() if summary.exists() else ""


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
    # The written questions are graded by hand later: not in the points of a push.
    assert maximum == graded["max_score"] - WRITTEN_MAX == float(values["max-score"])
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


def test_public_points_say_they_are_not_the_grade(repo, tmp_path):
    """A correct file scores every public point: the step summary and the log say these are
    the public cases and how many points the hidden ones (graded later) are worth, with the
    full total, as `autograder grade` on every case counts them; no green mark says "done"."""
    sub = SUBMISSIONS / "correct" / "einsum_style.py"
    r, values, summary = run_grade_step(repo, tmp_path, sub)
    out = tmp_path / "full.json"
    assert cli_in_process("grade", "-a", "attention", str(sub), "--json",
                          str(out)).returncode == 0
    full = json.loads(out.read_text())["submissions"][0]
    public, most = float(values["max-score"]), full["max_score"] - WRITTEN_MAX
    later = (f"worth {most - public:g} more points, and the written questions, worth "
             f"{WRITTEN_MAX:g} (graded by hand), are graded later: the grade is out of "
             f"{full['max_score']:g} in all ({most:g} autograded, {WRITTEN_MAX:g} written and "
             "graded by hand)")
    heading = f"{public:g} / {public:g} points on the public cases"
    assert summary.splitlines()[0].endswith(heading) and later in summary
    assert "✅" not in summary and "all public cases pass" in summary
    log = r.stdout.split("::stop-commands::", 1)[1]
    assert heading in log and later in log


def test_workflow_uses_the_actions_majors_classroom50_uses(assignment):
    wf = yaml.safe_load(workflow_yaml(assignment, assignment_dir="assignments/attention"))
    uses = [s["uses"] for s in wf["jobs"]["grade"]["steps"] if "uses" in s]
    assert "actions/checkout@v7" in uses and "actions/setup-python@v7" in uses


# Modules a student could commit at the top of the repository, named like modules the grading
# step imports (the standard library's, the engine's dependencies', start-up hooks): each
# would forge a full score if imported, and leaves a mark.
FORGER = """
import os, pathlib
pathlib.Path({marker!r}).write_text("imported")
if os.environ.get("GITHUB_OUTPUT"):
    with open(os.environ["GITHUB_OUTPUT"], "a") as f:
        f.write("score=13\\n")
"""
SHADOWS = ["secrets", "json", "base64", "argparse", "sitecustomize", "yaml", "numpy", "torch"]


@pytest.fixture
def own_repo(repo, tmp_path):
    """A copy of the student repository this test may change."""
    return shutil.copytree(repo, tmp_path / "own", symlinks=True)


def test_modules_committed_at_the_top_are_never_imported(own_repo, tmp_path):
    marker = tmp_path / "forged"
    for name in SHADOWS:
        (own_repo / f"{name}.py").write_text(FORGER.format(marker=str(marker)))
    (own_repo / "helpers.py").write_text("def helper():\n    return 1\n")   # honest
    # The attack is real: the step as it was (`python -m autograder.platforms.actions` in the
    # checkout) imports the student's secrets.py.
    env = {**os.environ, "PYTHONPATH": str(own_repo), "GITHUB_OUTPUT": str(tmp_path / "o")}
    subprocess.run([sys.executable, "-m", "autograder.platforms.actions", "-a",
                    "assignments/attention", "--help"], cwd=own_repo, env=env,
                   capture_output=True, timeout=600)
    assert marker.exists()
    marker.unlink()
    r, values, summary = run_grade_step(own_repo, tmp_path, TEMPLATE)
    assert not marker.exists(), "a module of the checkout was imported"
    assert r.returncode == 1, r.stdout + r.stderr      # the untouched template: red, 0 points
    assert values["score"] == "0" and float(values["max-score"]) > 0
    lines = (tmp_path / "github_output").read_text().splitlines()
    assert [line for line in lines if line.startswith("score=")] == ["score=0"]


def test_outputs_are_appended_and_a_link_in_their_place_refused(tmp_path):
    from autograder.platforms.actions.run import write_outputs

    out = tmp_path / "github_output"
    write_outputs(out, {"score": "3"})
    write_outputs(out, {"max-score": "6"})
    assert out.read_text() == "score=3\nmax-score=6\n"
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    link = tmp_path / "linked_output"
    link.symlink_to(victim)
    with pytest.raises(OSError):
        write_outputs(link, {"score": "13"})
    assert victim.read_text() == "keep\n"


@pytest.mark.parametrize("table", [
    {"cases": "many", "points": 1}, {"cases": 2, "points": [1]},
    {"cases": 2, "points_by_question": "x"}, {"cases": 2, "points_by_question": {"a": {}}},
])
def test_a_malformed_hidden_cases_table_is_no_table(assignment, table):
    """The public bundle's [hidden_cases] sits in the student's own repository: an edited,
    malformed one is read as none (the plain wording), never a crash of the step."""
    import dataclasses

    from autograder.platforms.public_only import left_out

    edited = dataclasses.replace(assignment, config={**assignment.config, "hidden_cases": table})
    assert left_out(edited) is None


def test_summary_names_the_likely_mistake(repo, tmp_path):
    """The step summary names the mistake a wrong submission makes, as `check` does, from the
    student bundle's table (no reference, no catalogue in the repository)."""
    r, _, summary = run_grade_step(repo, tmp_path,
                                   SUBMISSIONS / "wrong" / "attention_divides_by_dk.py")
    assert r.returncode == 1, r.stderr
    row = next(line for line in summary.splitlines() if line.startswith("| attention "))
    assert "likely mistake: scores divided by d" in row, row
    assert not any("likely mistake" in line for line in summary.splitlines()
                   if line.startswith("| softmax "))


def _strings(value) -> str:
    """Every string of a JSON value, joined: what a platform shows of it."""
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return value if isinstance(value, str) else ""


def test_format_characters_show_as_codes(repo, tmp_path):
    """A message with a right-to-left override and other format characters shows each as a
    code (`<U+202E>`) in the log, the step summary and the per-question outputs."""
    sub = tmp_path / "cf" / "attention.py"
    sub.parent.mkdir()
    sub.write_text(forger_source(FORMAT_RAISE) + f"\nwhy_scale = {FORMAT_ANSWER!r}\n")
    r, values, summary = run_grade_step(repo, tmp_path, sub)
    assert r.returncode == 1, r.stderr
    outputs = _strings([json.loads(base64.b64decode(values[step_id(q)])) for q in QUESTIONS])
    for text in (r.stdout, summary, outputs):
        assert not set(text) & FORMAT_RAW
    assert FORMAT_MESSAGE_SHOWN in r.stdout and FORMAT_MESSAGE_SHOWN in outputs
    assert FORMAT_MESSAGE_SHOWN.replace("<", "&lt;").replace(">", "&gt;") in summary
