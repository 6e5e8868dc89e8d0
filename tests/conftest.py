"""Fixtures shared by the tests: the assignment, one sandbox for the whole run, grading."""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

# Test files in subfolders import the shared helpers module by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import ROOT  # noqa: E402,F401 - puts the project first on the import path

from autograder.assignment import load_assignment  # noqa: E402
from autograder.grade import check_in_process, grade_submission  # noqa: E402
from autograder.sandbox import Sandbox  # noqa: E402


PR_SET_CHILD_SUBREAPER = 36


@pytest.fixture(scope="session", autouse=True)
def orphans_stay_in_this_run():
    """A process that escapes the grader (a double fork, `setsid`) is reparented to this test
    process instead of init, so the leftover checks can look at this run's descendants only
    (`helpers.own_processes`) and never at other checkouts' runs on the same machine."""
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, ctypes.get_errno()
    yield


@pytest.fixture(scope="session")
def assignment():
    return load_assignment("attention")


@pytest.fixture(scope="session")
def sandbox():
    s = Sandbox("auto")
    yield s
    s.close()


@pytest.fixture(scope="session")
def grade(assignment, sandbox):
    def _grade(path: Path, **kw):
        return grade_submission(assignment, Path(path), sandbox, **kw)
    return _grade


@pytest.fixture(scope="session")
def check(assignment):
    def _check(path: Path):
        return check_in_process(assignment, Path(path))
    return _check
