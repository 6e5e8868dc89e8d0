"""run_autograder always leaves a valid Gradescope results.json, with the reason in `output`.

Each case runs the built `run_autograder` shell script in a simulated /autograder tree (a
temporary folder given as GRADESCOPE_ROOT), breaking one thing: no venv and no python3, no venv
but a python3 on PATH, a Python too old, a grader that crashes, one killed by SIGKILL (what the
out-of-memory killer sends), one that leaves a truncated file.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers import AUTOGRADED_MAX, QUESTIONS, SUBMISSIONS

NAME = "attention"
CORRECT = SUBMISSIONS / "correct" / "reference_style.py"
MAX_SCORE = float(AUTOGRADED_MAX)


@pytest.fixture(scope="module")
def zip_path(built) -> Path:
    return built / f"{NAME}-gradescope.zip"      # built once for the suite (conftest.py)


def _layout(tmp_path: Path, zip_path: Path, submission: Path = CORRECT) -> Path:
    root = tmp_path / "autograder"
    for sub in ("source", "submission"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    shutil.copy(submission, root / "submission" / "attention.py")
    return root


def _tools(folder: Path, **scripts: str) -> Path:
    """A PATH folder holding the external commands the script needs (mkdir, mv) and no
    python3 unless given as a script."""
    folder.mkdir()
    for tool in ("mkdir", "mv"):
        (folder / tool).symlink_to(shutil.which(tool))
    for name, text in scripts.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    return folder


def _run(root: Path, path: Path, python: str | None = None) -> tuple[dict, str]:
    env = {"PATH": str(path), "GRADESCOPE_ROOT": str(root), "HOME": str(root)}
    if python:
        env["AUTOGRADER_PYTHON"] = python
    r = subprocess.run(["/bin/bash", str(root / "source" / "run_autograder")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((root / "results" / "results.json").read_text()), r.stderr


def _assert_valid(results: dict) -> None:
    """Gradescope's results.json: the fields and types its spec requires."""
    assert isinstance(results["score"], float)
    assert isinstance(results["output"], str) and results["output"]
    assert results["stdout_visibility"] in ("hidden", "after_due_date", "after_published",
                                            "visible")
    assert [t["name"] for t in results["tests"]] == QUESTIONS
    for t in results["tests"]:
        assert isinstance(t["score"], float) and isinstance(t["max_score"], float)
        assert 0 <= t["score"] <= t["max_score"]
        assert t["status"] in ("passed", "failed")
        assert t["output_format"] == "text" and t["visibility"] in (
            "hidden", "after_due_date", "after_published", "visible")
    assert sum(t["max_score"] for t in results["tests"]) == MAX_SCORE


def _assert_fallback(results: dict, *words: str) -> None:
    _assert_valid(results)
    assert results["score"] == 0.0
    for w in words:
        assert w in results["output"], results["output"]
    assert all(t["output"] == results["output"] and t["status"] == "failed"
               for t in results["tests"])


def _wrapper(body: str) -> str:
    """A `python` that runs this test's interpreter, except where `body` says otherwise."""
    return f"#!/bin/bash\n{body}\nexec {sys.executable} \"$@\"\n"


def test_no_venv_and_no_python3(tmp_path, zip_path):
    root = _layout(tmp_path, zip_path)
    results, stderr = _run(root, _tools(tmp_path / "bin"))
    _assert_fallback(results, "venv/bin/python", "is missing", "no python3", "instructor")
    assert "is missing" in stderr


def test_no_venv_but_python3_on_path_still_grades(tmp_path, zip_path):
    root = _layout(tmp_path, zip_path)
    path = _tools(tmp_path / "bin", python3=_wrapper(""))
    results, stderr = _run(root, path)
    _assert_valid(results)
    assert results["score"] == MAX_SCORE
    assert "venv/bin/python) is missing" in stderr and "using" in stderr


def test_python_too_old(tmp_path, zip_path):
    root = _layout(tmp_path, zip_path)
    old = tmp_path / "python3.9"
    old.write_text('#!/bin/bash\nif [ "$1" = --version ]; then echo "Python 3.9.2"; exit 0; fi\n'
                   "exit 1\n")
    old.chmod(0o755)
    results, _ = _run(root, _tools(tmp_path / "bin"), python=str(old))
    _assert_fallback(results, "Python 3.11 or newer", "found Python 3.9.2", "instructor")


def test_grader_crash(tmp_path, zip_path):
    root = _layout(tmp_path, zip_path)
    (root / "source" / "autograder" / "platforms" / "gradescope" / "run.py").write_text(
        "raise RuntimeError('a broken engine')\n")
    results, _ = _run(root, _tools(tmp_path / "bin"), python=sys.executable)
    _assert_fallback(results, "exit status 1", "without writing valid results", "instructor")


def test_grader_killed_for_memory(tmp_path, zip_path):
    """SIGKILL is what the kernel's out-of-memory killer sends: the message says memory."""
    root = _layout(tmp_path, zip_path)
    python = tmp_path / "python"
    python.write_text(_wrapper('if [ "$2" = autograder.platforms.gradescope ]; then kill -KILL $$; fi'))
    python.chmod(0o755)
    results, _ = _run(root, _tools(tmp_path / "bin"), python=str(python))
    _assert_fallback(results, "killed (SIGKILL)", "ran out of memory")
    assert "time" not in results["output"] and "loop" not in results["output"]


def test_truncated_or_stale_results_are_replaced(tmp_path, zip_path):
    root = _layout(tmp_path, zip_path)
    (root / "results").mkdir()
    (root / "results" / "results.json").write_text('{"score": 35.0, "tests": []}')  # stale
    python = tmp_path / "python"
    python.write_text(_wrapper(
        'if [ "$2" = autograder.platforms.gradescope ]; then\n'
        '  printf \'{"score": 3\' > "$GRADESCOPE_ROOT/results/results.json"; exit 0\nfi'))
    python.chmod(0o755)
    results, _ = _run(root, _tools(tmp_path / "bin"), python=str(python))
    _assert_fallback(results, "exit status 0", "without writing valid results")


def test_inner_grader_killed_is_reported_as_memory(tmp_path, monkeypatch):
    """The grading subprocess killed (the engine itself survives): memory, not time."""
    from autograder.platforms.gradescope import run as gradescope

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(CORRECT, root / "submission" / "attention.py")

    def killed(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, -signal.SIGKILL, "", "")

    monkeypatch.setattr(gradescope.subprocess, "run", killed)
    results = gradescope.run(root, NAME)
    _assert_fallback(results, "killed (SIGKILL)", "ran out of memory")
    assert json.loads((root / "results" / "results.json").read_text()) == results


def test_conversion_fault_still_writes_results(tmp_path, monkeypatch):
    from autograder.platforms.gradescope import run as gradescope

    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copy(CORRECT, root / "submission" / "attention.py")

    def broken(*args, **kwargs):
        raise KeyError("questions")

    monkeypatch.setattr(gradescope, "to_gradescope", broken)
    monkeypatch.setattr(gradescope.subprocess, "run", lambda cmd, **kw: (
        Path(cmd[cmd.index("--json") + 1]).write_text('{"submissions": [{}]}'),
        subprocess.CompletedProcess(cmd, 0, "", ""))[1])
    results = gradescope.run(root, NAME)
    _assert_fallback(results, "failed while grading", "not of your code")


def test_relative_python_and_root_are_the_callers(tmp_path, zip_path):
    """The README's try-it command with relative paths, run from the folder holding them:
    run_autograder changes folder before grading, so both are resolved against the caller's
    folder first (the relative python used to end in 'exit status 127')."""
    root = _layout(tmp_path, zip_path)
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").write_text(_wrapper(""))
    (venv_bin / "python").chmod(0o755)
    env = {"PATH": str(_tools(tmp_path / "bin")), "HOME": str(tmp_path),
           "GRADESCOPE_ROOT": root.name, "AUTOGRADER_PYTHON": ".venv/bin/python"}
    r = subprocess.run(["/bin/bash", f"{root.name}/source/run_autograder"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    _assert_valid(results)
    assert results["score"] == MAX_SCORE, results["output"]
    assert "is missing" not in r.stderr


def test_a_python_named_without_a_folder_is_looked_up_on_path(tmp_path, zip_path):
    """`AUTOGRADER_PYTHON=python3` (the README's other form) is found on PATH, with no note
    that the autograder's Python is missing."""
    root = _layout(tmp_path, zip_path)
    path = _tools(tmp_path / "bin", python3=_wrapper(""))
    results, stderr = _run(root, path, python="python3")
    _assert_valid(results)
    assert results["score"] == MAX_SCORE
    assert "is missing" not in stderr
