"""Students' repositories graded as a class: a repository whose shipped workflow was changed is
flagged. (The workflow itself and its grading step: tests/test_actions.py.)"""
import json
import shutil

from helpers import SUBMISSIONS, cli_in_process


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
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "grades.json").read_text())
    flagged = {f["student"] for f in data.get("flags", [])}
    assert flagged == {"tamperer"}
    assert "Repositories to check" in (out / "report.html").read_text()
