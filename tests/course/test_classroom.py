"""Students' repositories graded as a class: a repository whose shipped workflow was changed is
flagged. (The workflow itself and its grading step: tests/test_actions.py.)"""
import csv
import json
import re
import shutil

from helpers import AUTOGRADED_MAX, MAX_SCORE, SUBMISSIONS, cli_in_process


def test_report_flags_a_repository_whose_workflow_changed(assignment, tmp_path):
    from autograder.platforms.build import shipped_files

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
    # Every row got its grade, but one needs the instructor: a documented status of its own.
    assert r.returncode == 4, r.stderr
    assert "1 row(s) need you: tamperer (repository changed)" in r.stderr
    data = json.loads((out / "grades.json").read_text())
    flagged = {f["student"] for f in data.get("flags", [])}
    assert flagged == {"tamperer"}
    rows = {s["student"]: s for s in data["submissions"]}
    assert [f["rule"] for f in rows["tamperer"]["integrity"]] == ["repository"]
    assert not rows["honest"].get("integrity")
    # The terminal table, grades.csv and the report's problems card show it, not only a list.
    line = next(x for x in r.stdout.splitlines() if x.startswith("tamperer"))
    assert line.endswith("FLAG") and f"{AUTOGRADED_MAX}/{MAX_SCORE}" in line
    assert not next(x for x in r.stdout.splitlines() if x.startswith("honest")).endswith("FLAG")
    csv_rows = {row["student"]: row for row in
                csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}
    assert csv_rows["tamperer"]["status"] == "review" and csv_rows["honest"]["status"] == "graded"
    html = (out / "report.html").read_text()
    assert "Repositories to check" in html
    assert re.search(r"problems<b>1</b>", html)
    assert "tamperer" in html.split("errored, timed out")[1].split("</table>")[0]
    # The honest repository alone: all graded, nothing to look at, exit 0.
    r = cli_in_process("grade", "-a", "attention", str(cls / "honest"), "--out",
                       str(tmp_path / "out-honest"))
    assert r.returncode == 0, r.stderr


def test_only_files_the_student_added_are_noted_as_not_graded(assignment, tmp_path):
    """Repositories made from the student bundle hold the engine, the assignment folder, the
    notebook...: none of those is an "also found, not graded" note. A file the student added,
    or the notebook they worked in beside the graded .py, still is."""
    from autograder.platforms.build import bundle_files

    cls = tmp_path / "class"
    for name in ("plain", "extra", "notebook"):
        repo = cls / name
        for rel, content in bundle_files(assignment).items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(content)
        shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", repo / "attention.py")
    (cls / "extra" / "scratch.py").write_text("x = 1\n")
    nb = cls / "notebook" / "attention.ipynb"
    nb.write_text(nb.read_text().replace("grader.check", "grader.check", 1) + "\n")
    out = tmp_path / "grades.json"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--json", str(out))
    assert r.returncode == 0, r.stderr
    notes = {s["student"]: s.get("notes", []) for s in json.loads(out.read_text())["submissions"]}
    assert not [n for n in notes["plain"] if "not graded" in n], notes["plain"]
    assert [n for n in notes["extra"] if "not graded" in n] == \
        ["graded attention.py; also found scratch.py, not graded"]
    assert [n for n in notes["notebook"] if "not graded" in n] == \
        ["graded attention.py; also found attention.ipynb, not graded"]
