"""Fixtures shared by the tests: the assignment, one sandbox for the whole run, grading."""
from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path
from typing import Callable

import pytest
from autograder.feedback.contract import submission_json

# Test files in subfolders import the shared helpers module by name.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import ROOT  # noqa: E402,F401 - puts the project first on the import path

from autograder.model.assignment import load_assignment  # noqa: E402
from autograder.grading.grade import check_in_process, grade_submission  # noqa: E402


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
    from helpers import close_session_sandbox, session_sandbox

    yield session_sandbox()      # also lent to in-process grading runs (`helpers.lent_sandbox`)
    close_session_sandbox()


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

def _made_once(tmp_path_factory, worker_id: str, name: str,
               make: Callable[[Path], dict]) -> dict:
    """`make(folder)` run once for the whole run, however many pytest-xdist workers need it:
    the first worker makes it under a file lock in the run's shared temporary folder, the
    others wait and read what it wrote (a JSON-able dict)."""
    if worker_id == "master":                       # not under xdist
        return make(tmp_path_factory.mktemp(name))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / f"made-once-{name}"
    with FileLock(f"{shared}.lock"):
        record = shared / "made.json"
        if record.exists():
            return json.loads(record.read_text())
        shared.mkdir()
        value = make(shared)
        record.write_text(json.dumps(value))
        return value


@pytest.fixture(scope="session")
def graded_corpus(tmp_path_factory, worker_id, sandbox):
    """`graded_corpus(name)`: every file of an assignment's corpus (`helpers.corpus_of`: its
    wrong/ and correct/ submissions), graded once for the suite in the sandbox, as
    {file name: result}. The results go through their JSON form, as the class cache keeps
    them, so every worker (and a run without xdist) reads the same thing."""
    from helpers import corpus_files
    from autograder.model.results import submission_from_json

    graded: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in graded:
            assignment = load_assignment(name)

            def make(folder: Path) -> dict:
                wrong, correct = corpus_files(name)
                results = {f.name: submission_json(grade_submission(assignment, f, sandbox))
                           for f in wrong + correct}
                assert len(results) == len(wrong) + len(correct), \
                    "corpus file names must be unique across folders"
                return results

            made = _made_once(tmp_path_factory, worker_id, f"corpus-{name}", make)
            graded[name] = {n: submission_from_json(row) for n, row in made.items()}
        return graded[name]

    return get


@pytest.fixture(scope="session")
def corpus_results(graded_corpus):
    """The torch track's wrong and correct corpus, graded once (`graded_corpus`)."""
    return graded_corpus("attention")


@pytest.fixture(scope="session")
def built_assignment(tmp_path_factory, worker_id):
    """`built_assignment(name)`: `autograder build -a NAME` once for the suite, as an
    instructor runs it: the student bundle, the Gradescope zip, the otter zip and the Classroom
    50 folder, in one output folder (its path)."""
    from helpers import run_cli

    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            def make(folder: Path) -> dict:
                out = folder / "built"
                r = run_cli("build", "-a", name, "--out", str(out))
                assert r.returncode == 0, r.stdout + r.stderr
                return {"out": str(out)}

            made[name] = Path(_made_once(tmp_path_factory, worker_id, f"built-{name}",
                                         make)["out"])
        return made[name]

    return get


@pytest.fixture(scope="session")
def built(built_assignment):
    """`autograder build -a attention`, once for the suite (`built_assignment`)."""
    return built_assignment("attention")


@pytest.fixture(scope="session")
def hostile_names(tmp_path_factory, worker_id):
    """One class of hostile names and messages, graded once with `--out --feedback` for the
    terminal, Markdown, CSV and HTML escaping tests (tests/hostile_names.py)."""
    from hostile_names import grade_class

    def make(folder: Path) -> dict:
        run = grade_class(folder)
        return {**run, "class": str(run["class"]), "out": str(run["out"])}

    run = _made_once(tmp_path_factory, worker_id, "hostile-names", make)
    return {**run, "class": Path(run["class"]), "out": Path(run["out"])}


# ------------------------------------------------------------------ pytest-xdist
# `make test` runs the suite on every core (`-n auto --dist loadfile`): a module's tests stay on
# one worker, so a module-scoped fixture (a class graded once) is made once per run; what
# several modules share (`graded_corpus`, `built_assignment`, `hostile_names`) is made once by
# `_made_once`.


def pytest_collection_modifyitems(config, items) -> None:
    """Modules holding end-to-end runs marked `slow` come first, each module's tests in their
    order: workers are handed modules in this order, and a module of minutes handed out last
    would leave one worker running it alone while the others wait."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.module.__name__ not in slow)   # a stable sort
