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


# ------------------------------------------------------------------ expensive work, done once
# Each of these used to be repeated by several test files; a session fixture does it once for
# all of them. Tests must not change what these return (copy first).

@pytest.fixture(scope="session")
def corpus_results(grade):
    """Every file of the wrong and correct corpus, graded once in the sandbox: {name: result}."""
    from helpers import SUBMISSIONS

    files = sorted((SUBMISSIONS / "wrong").glob("*.py")) + \
        sorted((SUBMISSIONS / "correct").glob("*.py"))
    results = {f.name: grade(f) for f in files}
    assert len(results) == len(files), "corpus file names must be unique across folders"
    return results


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """`autograder build -a attention` once, as an instructor runs it: the student bundle, the
    Gradescope zip, the otter zip and the Classroom 50 folder, in one output folder."""
    from helpers import run_cli

    out = tmp_path_factory.mktemp("built")
    r = run_cli("build", "-a", "attention", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.fixture(scope="session")
def hostile_names(tmp_path_factory):
    """One class of hostile names and messages, graded once with `--out --feedback` for the
    terminal, Markdown, CSV and HTML escaping tests (tests/hostile_names.py)."""
    from hostile_names import grade_class

    return grade_class(tmp_path_factory.mktemp("hostile-names"))
