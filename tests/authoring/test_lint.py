"""`autograder lint`: each authoring mistake gives its file, line and fix, and fails `build`,
`snapshot` and `check`; the guide's throwaway assignment has none."""
import json
import re
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, assignment_names, run_cli

from autograder.authoring.lint import lint

GUIDE = ROOT / "docs" / "writing-an-assignment.md"
BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```\n", re.S)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("lintcourse")
    for rel, text in BLOCK.findall(GUIDE.read_text()):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    r = run_cli("snapshot", "-a", str(root / "assignments" / "double"))
    assert r.returncode == 0, r.stdout + r.stderr
    return root


@pytest.fixture
def copy(course, tmp_path):
    """A fresh copy of the course; returns its assignment folder."""
    dest = tmp_path / "course"
    shutil.copytree(course, dest)
    return dest / "assignments" / "double"


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def only(errors, path: Path, line: int):
    assert len(errors) == 1, [str(e) for e in errors]
    e = errors[0]
    assert (e.file, e.line) == (path, line), str(e)
    return str(e)


def test_the_guide_assignment_is_clean(course):
    assert lint(course / "assignments" / "double") == []


def test_question_name_differs_from_its_id(copy):
    q = copy / "tests" / "double.py"
    edit(q, 'name = "double"', 'name = "doubling"')
    text = only(lint(copy), q, line_of(q, 'name = "doubling"'))
    assert "'doubling'" in text and 'fix: write `name = "double"`' in text
    # snapshot refuses before recording anything under the wrong name
    r = run_cli("snapshot", "-a", str(copy))
    # Said relative to the project, never where it sits on the author's machine.
    assert r.returncode == 2 and "\nassignments/double/tests/double.py:" in "\n" + r.stderr
    assert str(copy.parent.parent) not in r.stderr
    assert not (copy / "snapshots" / "doubling.json").exists()


def test_function_the_template_does_not_define(copy):
    toml = copy / "assignment.toml"
    edit(toml, 'functions = ["double"]', 'functions = ["double", "tripple"]')
    text = only(lint(copy), toml, line_of(toml, "tripple"))
    assert "`tripple`" in text and "define `def tripple(...)` in the template" in text


def test_unknown_table_and_key(copy):
    toml = copy / "assignment.toml"
    edit(toml, "[limits]", "[limit]")
    text = only(lint(copy), toml, line_of(toml, "[limit]"))
    assert "unknown table [limit] (did you mean `limits`?)" in text
    edit(toml, "[limit]", "[limits]\nquestion_secs = 3")
    text = only(lint(copy), toml, line_of(toml, "question_secs"))
    assert "unknown key `question_secs` in [limits] (did you mean `question_seconds`?)" in text
    edit(toml, "question_secs = 3", "")
    edit(toml, 'title = ', 'titel = "x"\ntitle = ')
    text = only(lint(copy), toml, line_of(toml, "titel"))
    assert "unknown key `titel` (did you mean `title`?)" in text


def test_stale_and_missing_snapshots(copy):
    q = copy / "tests" / "double.py"
    edit(q, "tensor([1.0, 2.0, 3.0])", "tensor([1.0, 2.0, 5.0])")
    text = only(lint(copy), q, line_of(q, 'snapshot("small")'))
    assert "double/small is stale" in text and "run `autograder snapshot" in text
    # without the reference, only existence is checked
    assert lint(copy, reference=False) == []
    edit(q, 'snapshot("small")', 'snapshot("smaller")')
    text = only(lint(copy, reference=False), q, line_of(q, 'snapshot("smaller")'))
    assert "double/smaller is missing" in text
    # The fix names the assignment as the author runs it from the project, never by where the
    # project sits on their machine.
    assert "fix: run `autograder snapshot -a assignments/double`" in text, text
    assert text.startswith("assignments/double/tests/double.py:") and str(copy) not in text


def test_hidden_case_without_points(copy):
    q = copy / "tests" / "double.py"
    edit(q, 'points=1, hidden=True', 'points=0, hidden=True')
    text = only(lint(copy), q, line_of(q, "points=0, hidden=True"))
    assert "hidden case batched has no points" in text and "points=" in text


def test_cases_giving_more_than_the_files_points(copy):
    """otter refuses a question file whose cases give more points than its `points`: lint says
    so by the line. (Fewer is a student bundle's copy, its hidden cases cut out.)"""
    q = copy / "tests" / "double.py"
    edit(q, "points = 2", "points = 1")
    text = only(lint(copy, reference=False), q, line_of(q, "points = 1"))
    assert "the cases give 2 points, more than the file's `points = 1`" in text
    assert "fix: write `points = 2`" in text
    edit(q, "points = 1", "points = 5")
    assert lint(copy, reference=False) == []


def test_build_and_check_refuse(copy):
    toml = copy / "assignment.toml"
    edit(toml, "[limits]", "[limit]")
    r = run_cli("build", "-a", str(copy), "--out", str(copy.parent.parent / "dist"))
    assert r.returncode == 2 and "[limit]" in r.stderr
    assert "\nassignments/double/assignment.toml:" in "\n" + r.stderr
    assert str(toml.parent.parent.parent) not in r.stderr
    assert not (copy.parent.parent / "dist").exists()
    r = run_cli("check", str(copy.parent.parent / "reference" / "double.py"), "-a", str(copy))
    assert r.returncode == 2 and "[limit]" in r.stderr
    r = run_cli("lint", "-a", str(copy))
    assert r.returncode == 1 and "fix: rename it" in r.stderr


@pytest.mark.parametrize("name", assignment_names())
def test_the_real_assignments_are_clean(name):
    assert lint(name) == [], name


def test_student_readme_is_generic(course, tmp_path):
    r = run_cli("build", "-a", str(course / "assignments" / "double"), "--out",
                str(tmp_path / "dist"), "--no-otter")
    assert r.returncode == 0, r.stdout + r.stderr
    readme = (tmp_path / "dist" / "double-student" / "README.md").read_text().lower()
    for word in ("mask", "head", "attention", "float64"):
        assert word not in readme, word
    json.dumps(readme)
