"""The GitHub Classroom workflow: valid YAML, letter-and-digit step ids, and grading commands
whose runner JSON sums to the same points as `autograder grade` on the same (public) cases."""
import base64
import json
import re
import shlex
import shutil

import yaml

from helpers import QUESTIONS, SUBMISSIONS, run_cli
from autograder.classroom import workflow_yaml


def test_workflow_parses_and_step_ids_are_alphanumeric(assignment):
    wf = yaml.safe_load(workflow_yaml(assignment, assignment_dir="grader"))
    steps = wf["jobs"]["run-autograding-tests"]["steps"]
    ids = [s["id"] for s in steps if "id" in s]
    assert len(ids) == len(QUESTIONS)
    assert all(re.fullmatch(r"[A-Za-z0-9]+", i) for i in ids)
    reporter = steps[-1]
    assert reporter["uses"].startswith("classroom-resources/autograding-grading-reporter")
    assert reporter["with"]["runners"].split(",") == ids
    assert set(reporter["env"]) == {f"{i.upper()}_RESULTS" for i in ids}
    for i in ids:
        assert reporter["env"][f"{i.upper()}_RESULTS"] == f"${{{{steps.{i}.outputs.result}}}}"


def test_running_the_steps_gives_partial_credit_summing_to_grade(assignment, tmp_path):
    """The repository Classroom hands a student is the student bundle with its workflow: run
    each grading step there, as the runner would, on a student's (wrong) attention.py."""
    from autograder.build import build_student
    from autograder.classroom import WORKFLOW_PATH

    repo = build_student(assignment, tmp_path / "dist")
    sub = SUBMISSIONS / "wrong" / "mask_ignored.py"
    shutil.copy(sub, repo / "attention.py")
    wf = yaml.safe_load((repo / WORKFLOW_PATH).read_text())
    steps = [s for s in wf["jobs"]["run-autograding-tests"]["steps"] if "id" in s]
    assert [s["id"] for s in steps] == [re.sub(r"[^A-Za-z0-9]", "", q) for q in QUESTIONS]
    total, maximum = 0.0, 0.0
    for step in steps:
        command = step["run"].split(">>")[0]
        args = shlex.split(command)
        assert args[:3] == ["python", "-m", "autograder"]
        r = run_cli(*args[3:], cwd=repo, env={"PYTHONPATH": str(repo)})
        assert r.returncode == 0, r.stderr
        line = r.stdout.strip()
        assert line.startswith("result=")
        data = json.loads(base64.b64decode(line[len("result="):]))
        assert data["version"] == 1 and data["status"] in ("pass", "fail", "error")
        for t in data["tests"]:
            assert set(t) >= {"name", "status", "score", "message", "test_code", "filename",
                              "line_no", "duration"}
        total += sum(t["score"] for t in data["tests"])
        maximum += data["max_score"]
    out = tmp_path / "g.json"
    r = run_cli("grade", "-a", "attention", str(sub), "--public-only", "--json", str(out))
    graded = json.loads(out.read_text())["submissions"][0]
    assert total == graded["score"] and maximum == graded["max_score"]
    assert 0 < total < maximum  # partial credit, not all-or-nothing


def test_report_flags_a_repository_whose_workflow_changed(assignment, tmp_path):
    from autograder.build import shipped_files

    cls = tmp_path / "class"
    for name in ("honest", "tamperer"):
        repo = cls / name
        (repo / ".github" / "workflows").mkdir(parents=True)
        shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", repo / "attention.py")
        for rel, content in shipped_files(assignment).items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(content)
    wf = cls / "tamperer" / ".github" / "workflows" / "classroom.yml"
    wf.write_text(wf.read_text().replace("max_score", "max_score") + "\n# always pass\n")
    out = tmp_path / "out"
    r = run_cli("grade", "-a", "attention", str(cls), "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "grades.json").read_text())
    flagged = {f["student"] for f in data.get("flags", [])}
    assert flagged == {"tamperer"}
    assert "Repositories to check" in (out / "report.html").read_text()
