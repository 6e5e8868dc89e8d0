"""Written answers through a whole class run: kept in grades.json with the score pending; a
CSV import reaches grades.json, the feedback files and gradebook.csv; grading again keeps the
hand grades; an answer changed after grading waits for a grader again; report.html counts the
rubric items. One small class (softmax and the written questions) graded into one folder."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import SUBMISSIONS, cli_in_process

CORRECT = (SUBMISSIONS / "correct" / "einsum_style.py").read_text()
SCALE = "Dot products grow with d_k, so the softmax saturates and its gradients vanish."
ONLY = ["--question", "softmax", "--question", "why_scale", "--question", "why_positions"]


def _grade(cls: Path, out: Path, roster: Path) -> dict:
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "1",
                       "--roster", str(roster), *ONLY)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return {"stdout": r.stdout,
            "json": {s["student"]: s for s in
                     json.loads((out / "grades.json").read_text())["submissions"]},
            "csv": {row["student"]: row for row in
                    csv.DictReader((out / "grades.csv").open(encoding="utf-8"))}}


def _gradebook(out: Path) -> dict[str, str]:
    """{student's name: the points gradebook.csv sends} (the LMS's import format)."""
    rows = list(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
    return {row[0]: row[-1] for row in rows[1:]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("written-class")
    cls = root / "class"
    cls.mkdir()
    (cls / "ann.py").write_text(CORRECT + f'\nwhy_scale = """\n{SCALE}\n"""\n')
    (cls / "bob.py").write_text(CORRECT + f'\nwhy_scale = "{SCALE}"\n'
                                "why_positions = 'Attention sees a set; order must be added.'\n")
    # Built at run time: only the worker's report has it (the source holds a call).
    (cls / "cat.py").write_text(CORRECT + "\nimport textwrap\nwhy_scale = textwrap.dedent('''\n"
                                "    Large scores make the softmax pick one key.\n''')\n")
    # Crashes on import: its code scores nothing, its answer is still read from the source.
    (cls / "dan.py").write_text('why_positions = "Shuffling the tokens only shuffles the '
                                'outputs."\nraise RuntimeError("oops")\n')
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name\n1,ann,Ann\n2,bob,Bob\n3,cat,Cat\n"
                      "4,dan,Dan\n")
    out = root / "out"
    first = _grade(cls, out, roster)
    return {"root": root, "cls": cls, "out": out, "roster": roster, "first": first}


def test_answers_are_kept_in_grades_json_with_the_score_pending(run):
    rows = run["first"]["json"]
    ann = rows["ann"]["questions"]["why_scale"]
    assert ann["kind"] == "written" and ann["score"] is None and ann["status"] == "pending"
    assert ann["answer"] == SCALE and ann["max_score"] == 3
    assert rows["cat"]["questions"]["why_scale"]["answer"] == \
        "Large scores make the softmax pick one key."
    dan = rows["dan"]["questions"]
    assert dan["softmax"]["score"] == 0 and dan["why_positions"]["status"] == "pending"
    assert dan["why_scale"] == {**dan["why_scale"], "status": "not attempted", "score": 0}
    # Autograded points are unchanged; written points are in the maximum, pending.
    assert rows["ann"]["score"] == rows["ann"]["questions"]["softmax"]["score"] == 6
    assert rows["ann"]["max_score"] == 6 + 3 + 2 and rows["ann"]["written_pending"] == 1
    assert "5 written answers of 4 students wait for a grader" in run["first"]["stdout"]
    assert run["first"]["csv"]["ann"]["why_scale"] == ""   # pending: no number yet


def test_a_csv_import_reaches_grades_json_the_feedback_and_the_gradebook(run, tmp_path):
    out = run["out"]
    sheet = tmp_path / "export.csv"
    r = cli_in_process("review", "-a", "attention", str(out), "--export", str(sheet))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    for row in rows:
        if row["student"] == "ann" and row["question"] == "why_scale":
            row.update(rubric="grow;saturate", comment="Say what it does to learning.")
        if row["student"] == "bob" and row["question"] == "why_positions":
            row.update(points="2")
    with sheet.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    r = cli_in_process("review", "-a", "attention", str(out), "--import", str(sheet),
                       "--grader", "tess")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "imported 2 grade(s)" in r.stdout and "up to date" in r.stdout
    data = {s["student"]: s for s in json.loads((out / "grades.json").read_text())
            ["submissions"]}
    ann = data["ann"]["questions"]["why_scale"]
    assert (ann["score"], ann["status"], ann["grader"], ann["rubric"]) == \
        (2, "graded", "tess", ["grow", "saturate"])
    assert data["ann"]["score"] == 6 + 2
    md = (out / "feedback" / "ann.md").read_text()
    assert "## why_scale (written): 2/3 (graded by hand)" in md
    assert "Say what it does to learning." in md and "(+1)" in md
    html = (out / "feedback" / "ann.html").read_text()
    assert "why_scale (written): 2/3" in html
    assert _gradebook(out)["Ann"] == "8" and _gradebook(out)["Bob"] == "8"
    report = (out / "report.html").read_text()
    assert "Written questions (graded by hand)" in report
    assert "how often each rubric item applied" in report


def test_grading_again_keeps_the_hand_grades_and_regrades_a_changed_answer(run):
    again = _grade(run["cls"], run["out"], run["roster"])
    assert again["json"]["ann"]["questions"]["why_scale"]["score"] == 2
    assert again["json"]["bob"]["questions"]["why_positions"]["score"] == 2
    bob = run["cls"] / "bob.py"
    bob.write_text(bob.read_text().replace("order must be added", "so positions are added"))
    changed = _grade(run["cls"], run["out"], run["roster"])
    q = changed["json"]["bob"]["questions"]["why_positions"]
    assert q["status"] == "regrade" and q["score"] is None
    assert "changed since they were graded" in changed["stdout"]
    assert changed["json"]["ann"]["questions"]["why_scale"]["score"] == 2   # untouched
    assert _gradebook(run["out"])["Bob"] == "6"      # the old grade no longer counts


def test_a_bad_import_changes_nothing_and_names_each_row(run, tmp_path):
    before = (run["out"] / "grades.json").read_text()
    sheet = tmp_path / "bad.csv"
    sheet.write_text("student,question,points,rubric,comment\nann,why_scale,9,,\n"
                     "zed,why_scale,1,,\n", encoding="utf-8")
    r = cli_in_process("review", "-a", "attention", str(run["out"]), "--import", str(sheet))
    assert r.returncode == 1
    assert "row 2: points 9 are not between 0 and 3" in r.stderr
    assert "row 3: no answer of 'zed'" in r.stderr and "nothing imported" in r.stderr
    assert (run["out"] / "grades.json").read_text() == before
