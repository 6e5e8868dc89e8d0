"""Every assignment of assignments/ with an example class, as its instructor grades that class:
written answers graded through the spreadsheet path of `autograder review` reach grades.json,
and `autograder similarity` names a renamed copy first."""
import csv
import shutil
from pathlib import Path

import pytest

from helpers import assignments_for, cli_in_process, examples_of, load_json

from autograder.model.assignment import load_assignment

# Assignments without an example class have no class to run these on.
WITH_WRITTEN = [n for n in assignments_for("written answers")
                if load_assignment(n).written and examples_of(n)]
WITH_EXAMPLES = [n for n in assignments_for("similarity") if examples_of(n)]


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """Each assignment's example class graded once with `--out`, as `make demo` does."""
    runs: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in runs:
            out = tmp_path_factory.mktemp(f"class-{name}") / "out"
            r = cli_in_process("grade", "-a", name, str(examples_of(name)), "--out", str(out))
            assert r.returncode in (0, 4), r.stderr[-3000:]
            runs[name] = out
        return runs[name]

    return get


@pytest.mark.parametrize("name", WITH_WRITTEN)
def test_written_answers_graded_by_spreadsheet_reach_the_grades(name, class_run, tmp_path):
    assignment = load_assignment(name)
    out = class_run(name)
    exported = tmp_path / "answers.csv"
    r = cli_in_process("review", "-a", name, str(out), "--export", str(exported))
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(exported.open()))
    pending = [row for row in rows if row["status"] == "pending"]
    assert pending, "the example class answers no written question"
    row = pending[0]
    question = next(q for q in assignment.written if q.id == row["question"])
    item = next(i for i in question.rubric if i.points > 0)
    sheet = tmp_path / "grades.csv"
    with sheet.open("w", newline="") as f:
        w = csv.DictWriter(f, ["student", "question", "points", "rubric", "comment"])
        w.writeheader()
        w.writerow({"student": row["student"], "question": row["question"], "points": "",
                    "rubric": item.id, "comment": ""})
    r = cli_in_process("review", "-a", name, str(out), "--import", str(sheet))
    assert r.returncode == 0, r.stdout + r.stderr
    grades = load_json(out / "grades.json")
    student = next(s for s in grades["submissions"] if Path(s["path"]).stem == row["student"])
    answer = student["questions"][row["question"]]
    assert answer["score"] == item.points and answer["status"] == "graded", answer


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_similarity_names_a_renamed_copy_first(name, tmp_path):
    from course import similarity_class

    cls = tmp_path / "class"
    shutil.copytree(examples_of(name), cls, ignore=shutil.ignore_patterns("*.md"))
    original = sorted(p for p in cls.glob("*.py"))[0]
    (cls / "copied.py").write_text(similarity_class.rename(original.read_text()))
    r = cli_in_process("similarity", "-a", name, str(cls), "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr[-3000:]
    pairs = load_json(tmp_path / "out" / "similarity.json")["pairs"]
    assert {pairs[0]["a_student"], pairs[0]["b_student"]} == {original.stem, "copied"}
    assert pairs[0]["copy"] is not None
