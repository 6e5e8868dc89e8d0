"""docs/writing-an-assignment.md, followed literally: its example assignment (`double`) is copied
out of the guide into a throwaway folder outside the project, and `autograder snapshot`, the
notebook generator, `check`, `grade` and `build` work on it by path, with no engine change."""
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from otter.test_files.exception_test import ExceptionTestFile

from helpers import ROOT, load_json, run_cli

from autograder.model.assignment import ASSIGNMENTS_DIR, load_assignment

GUIDE = ROOT / "docs" / "writing-an-assignment.md"
BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```\n", re.S)
CORRECT = '''import torch


def double(x):
    return x + x


double_of_21 = 21 * 2
'''


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder laid out as the guide says, holding only what the guide shows."""
    root = tmp_path_factory.mktemp("course")
    for rel, text in BLOCK.findall(GUIDE.read_text()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return root


@pytest.fixture(scope="module")
def adir(course):
    folder = course / "assignments" / "double"
    r = run_cli("snapshot", "-a", str(folder))
    assert r.returncode == 0, r.stdout + r.stderr
    r = run_cli_module("autograder.platforms.notebook", str(folder))
    assert r.returncode == 0, r.stdout + r.stderr
    return folder


def run_cli_module(module: str, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_the_guide_shows_every_file_of_the_example(course):
    files = sorted(p.relative_to(course).as_posix() for p in course.rglob("*") if p.is_file())
    assert files == ["assignments/double/assignment.toml", "assignments/double/mistakes.py",
                     "assignments/double/notebook.md",
                     "assignments/double/tests/double.py", "assignments/double/tests/recall.py",
                     "reference/double.py", "student_template/double.py"]
    assert not (ASSIGNMENTS_DIR / "double").exists()   # nothing added to the project


def test_the_assignment_loads_by_path(adir):
    a = load_assignment(str(adir))
    assert a.name == "double" and a.root == adir.resolve()
    assert [q.id for q in a.questions] == ["double", "recall"]
    assert list(a.api) == ["double"] and a.answers == ["double_of_21"]
    assert a.reference_path == (adir.parent.parent / "reference" / "double.py").resolve()
    assert load_assignment(str(adir / "assignment.toml")).name == "double"


def test_snapshot_and_notebook(adir, course):
    snaps = {p.name: json.loads(p.read_text()) for p in (adir / "snapshots").glob("*.json")}
    assert set(snaps) == {"double.json", "recall.json"}
    assert snaps["double.json"]["small"]["output"]["data"] == [2.0, 4.0, 6.0]
    assert "42" not in json.dumps(snaps["recall.json"])
    nb = course / "student_template" / "double.ipynb"
    assert nb.is_file() and 'grader.check(\\"recall\\")' in nb.read_text()
    r = run_cli_module("autograder.platforms.notebook", str(adir), "--check")
    assert r.returncode == 0, r.stdout


def test_check(adir, course, tmp_path):
    r = run_cli("check", str(course / "reference" / "double.py"), "-a", str(adir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[PASS] double: 1/1" in r.stdout and "[PASS] recall: 1/1" in r.stdout
    r = run_cli("check", str(course / "student_template" / "double.py"), "-a", str(adir))
    assert r.returncode == 1
    assert "[TODO] double" in r.stdout and "`double_of_21` is still None" in r.stdout


def test_the_guides_catalogue_names_its_mistakes(adir, course, tmp_path):
    """The catalogue the guide teaches works as written: its variant is caught by the public
    case (lint is clean), named in the student's check from the shipped table, and named in the
    grade; its rule names the forbidden call."""
    r = run_cli("lint", "-a", str(adir))
    assert r.returncode == 0, r.stdout + r.stderr
    adds_two = tmp_path / "adds_two.py"
    adds_two.write_text(CORRECT.replace("return x + x", "return x + 2"))
    r = run_cli("check", str(adds_two), "-a", str(adir))
    assert "likely mistake: two added instead of doubling" in r.stdout, r.stdout
    out = tmp_path / "g.json"
    mul = tmp_path / "mul.py"
    mul.write_text(CORRECT.replace("return x + x", "return torch.mul(x, 2)"))
    r = run_cli("grade", "-a", str(adir), str(adds_two), str(mul), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    named = [[c.get("diagnosis") for c in row["questions"]["double"]["cases"]]
             for row in load_json(out)["submissions"]]
    assert named == [[["adds_two"], ["adds_two"]],
                     [["library_shortcut"], ["library_shortcut"]]], named


def test_grade(adir, course, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "right.py").write_text(CORRECT)
    (subs / "uses_mul.py").write_text(CORRECT.replace("return x + x", "return torch.mul(x, 2)")
                                      .replace("21 * 2", "21"))
    # Forbidding torch.mul forbids what it computes: the operator, by any route.
    (subs / "uses_star.py").write_text(CORRECT.replace("return x + x", "return 2 * x"))
    shutil.copy(course / "student_template" / "double.py", subs / "template.py")
    out = tmp_path / "grades.json"
    r = run_cli("grade", "-a", str(adir), str(subs), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_json(out)
    assert data["assignment"] == "double"
    rows = {Path(s["path"]).name: s for s in data["submissions"]}
    assert rows["right.py"]["score"] == rows["right.py"]["max_score"] == 3
    assert rows["template.py"]["score"] == 0
    assert {q["status"] for q in rows["template.py"]["questions"].values()} == {"not attempted"}
    mul = rows["uses_mul.py"]["questions"]
    assert mul["double"]["status"] == "forbidden call" and "torch.mul" in mul["double"]["feedback"]
    star = rows["uses_star.py"]["questions"]["double"]
    assert star["status"] == "forbidden call" and "torch.mul" in star["feedback"]
    assert mul["recall"]["status"] == "failed"
    assert "that is the input; double it" in mul["recall"]["feedback"]
    assert "42" not in mul["recall"]["feedback"]


def test_build(adir, tmp_path):
    out = tmp_path / "dist"
    r = run_cli("build", "-a", str(adir), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    student = out / "double-student"
    names = sorted(p.relative_to(student).as_posix() for p in student.rglob("*")
                   if p.is_file() and not p.relative_to(student).as_posix().startswith(
                       "autograder/"))
    assert "double.py" in names and "double.ipynb" in names
    assert not any("reference" in n for n in names)
    tf = ExceptionTestFile.from_file(str(student / "assignments/double/tests/double.py"))
    assert [tc.hidden for tc in tf.test_cases] == [False]
    (student / "double.py").write_text(CORRECT)
    r = run_cli("check", "double.py", cwd=student)
    assert r.returncode == 0, r.stdout + r.stderr
    with zipfile.ZipFile(out / "double-gradescope.zip") as z:
        assert "assignments/double/reference/double.py" in z.namelist()
    assert (out / "double-otter.zip").is_file()
