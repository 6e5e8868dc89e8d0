"""A class graded again with `--out` regrades a submission when anything that can change its
grade changed since the last run: a question file, a snapshot, the reference, the template or
the limits; and regrades nothing when nothing changed.

Each run here is what one `autograder grade --out` process does (the assignment's version is
remembered per process, so it is forgotten between runs as a new process would)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, copy_assignment, lent_sandbox

from autograder.course import batch
from autograder.model.assignment import load_assignment
from autograder.course.classlist import Student

TEMPLATE = ROOT / "student_template" / "attention.py"
REFERENCE = ROOT / "reference" / "attention.py"


@pytest.fixture
def course(tmp_path):
    """A copy of the assignment with its own template and reference (edited by the test, never
    the real ones), and one submission: the template, which grades fast (nothing attempted)."""
    folder = copy_assignment(tmp_path / "assignment")
    shutil.copy(TEMPLATE, tmp_path / "template.py")
    shutil.copy(REFERENCE, tmp_path / "reference.py")
    toml = (folder / "assignment.toml").read_text()
    toml = re.sub(r'^template = ".*"$', f'template = "{tmp_path / "template.py"}"', toml,
                  count=1, flags=re.M)
    toml = re.sub(r'^reference = ".*"$', f'reference = "{tmp_path / "reference.py"}"', toml,
                  count=1, flags=re.M)
    (folder / "assignment.toml").write_text(toml)
    submission = tmp_path / "class" / "ada.py"
    submission.parent.mkdir()
    shutil.copy(TEMPLATE, submission)
    return {"folder": folder, "root": tmp_path, "submission": submission,
            "out": tmp_path / "out"}


def run(course: dict, limits_override: dict | None = None) -> bool:
    """One grading run with `--out`; whether the submission came from the cache."""
    batch._version_of.cache_clear()        # a new process: nothing remembered
    assignment = load_assignment(course["folder"])
    limits = assignment.limits.override(limits_override or {})
    student = Student("ada", None, course["submission"])
    with lent_sandbox():        # what is cached is the question here, not the sandbox's start
        [graded] = batch.grade_class(assignment, [student], out=course["out"], jobs=1,
                                     sandbox_level="auto", limits=limits, progress=False)
    assert graded.result.questions and not graded.result.error, graded.result.error
    return graded.cached


def _append_comment(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit that changes no grade today\n")


def _touch_snapshot(path: Path) -> None:
    # Same values, different bytes: a re-recorded snapshot may differ only in formatting.
    path.write_text(path.read_text() + "\n")


CHANGES = {
    "question file": lambda c: _append_comment(c["folder"] / "tests" / "softmax.py"),
    "snapshot": lambda c: _touch_snapshot(c["folder"] / "snapshots" / "softmax.json"),
    "reference": lambda c: _append_comment(c["root"] / "reference.py"),
    "template": lambda c: _append_comment(c["root"] / "template.py"),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_a_changed_assignment_file_regrades(course, what):
    assert run(course) is False            # first run: graded
    assert run(course) is True             # unchanged: from the cache, no sandbox
    CHANGES[what](course)
    assert run(course) is False, f"a changed {what} must regrade"
    assert run(course) is True


def test_changed_limits_regrade(course):
    assert run(course, {"question_seconds": 10}) is False
    assert run(course, {"question_seconds": 10}) is True
    assert run(course, {"question_seconds": 11}) is False, "changed limits must regrade"
    assert run(course, {"question_seconds": 11}) is True
