"""The student path and the grader on Python 3.12 and 3.13 (Classroom 50's runner defaults to
3.14), with each interpreter found on this machine (PATH, or pyenv's versions folder).

For each present Python: the engine compiles with every warning an error; in the built student
bundle, `python -m autograder check` and Classroom 50's `autograder.py` run on it and, where
its packages are missing, say which in one line; and a virtual environment made from the
bundle's requirements, torch pinned to 2.13.0, installed offline (only the local package
sources pip is configured with), checks the public cases and grades a submission with the
same points as this interpreter. That last test says exactly why when pip cannot install
torch 2.13.0 offline for that Python; a Python that is not installed is named as missing.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, run_cli

VERSIONS = ["3.12", "3.13"]
TORCH = "torch==2.13.0"
CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "mask_ignored.py"


def find_python(version: str) -> str | None:
    """An interpreter of that version that runs (a pyenv shim may exist and refuse)."""
    pyenv = os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")
    for path in sorted(glob.glob(pyenv), reverse=True) + [shutil.which(f"python{version}")]:
        if path and subprocess.run([path, "-c", "import sys; print('%d.%d' % "
                                    "sys.version_info[:2])"], capture_output=True,
                                   text=True).stdout.strip() == version:
            return path
    return None


@pytest.fixture(params=VERSIONS)
def python(request) -> str:
    path = find_python(request.param)
    if path is None:
        pytest.skip(f"Python {request.param} is not installed here (no python{request.param} "
                    "on PATH or under ~/.pyenv/versions)")
    return path


def has(python: str, module: str) -> bool:
    return subprocess.run([python, "-I", "-c", f"import {module}"],
                          capture_output=True).returncode == 0


@pytest.fixture
def student(built, tmp_path) -> Path:
    return shutil.copytree(built / "attention-student", tmp_path / "student")


def test_engine_compiles_without_warnings(python, tmp_path):
    """3.12 made invalid escape sequences a SyntaxWarning (an error later): none here."""
    copy = shutil.copytree(ROOT / "autograder", tmp_path / "autograder")
    r = subprocess.run([python, "-W", "error", "-m", "compileall", "-q", str(copy)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_runs_or_names_the_missing_package(python, student):
    shutil.copy(CORRECT, student / "attention.py")
    r = subprocess.run([python, "-m", "autograder", "check", "attention.py"], cwd=student,
                       capture_output=True, text=True, timeout=600)
    if has(python, "torch") and has(python, "otter"):
        assert r.returncode == 0 and "All public checks pass" in r.stdout, r.stdout + r.stderr
    else:
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "is not installed in this Python (3.1" in lines[0]
        assert "pip install -r requirements.txt" in lines[0]


def test_classroom50_autograder_runs_on_it(python, built, tmp_path):
    """Classroom 50 runs `sys.executable autograder.py`: on this Python it checks the
    requirements and, with installing switched off, names what is missing."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(WRONG, repo / "attention.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(CLASSROOM50_BUNDLE_DIR=str(built / "attention-classroom50"),
               CLASSROOM50_NO_INSTALL="1")
    r = subprocess.run([python, str(built / "attention-classroom50" / "autograder.py")],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    if has(python, "torch") and has(python, "otter"):
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads((repo / "result.json").read_text())["score"] > 0
    else:
        assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr
        assert "installing is switched off: torch>=2.4" in r.stdout, r.stdout


def offline_pip_sources() -> list[str]:
    """pip options that keep only the local sources pip is configured with (file: indexes;
    find-links folders stay from its configuration): no download from the network."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                         capture_output=True, text=True).stdout
    local = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(("index-url", "extra-index-url")):
            local += [u for u in value.strip("'\"").split() if u.startswith("file:")]
    if not local:
        return ["--no-index"]
    return ["--index-url", local[0]] + [a for u in local[1:] for a in ("--extra-index-url", u)]


def test_bundle_requirements_with_torch_2_13_check_and_grade(python, built, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    vpy = str(venv / "bin" / "python")
    reqs = [line.strip() for line in (built / "attention-student" / "requirements.txt")
            .read_text().splitlines() if line.strip() and not line.startswith(("#", "-"))]
    reqs = [TORCH if r.startswith("torch") else r for r in reqs if r != "ipykernel"]
    sources = offline_pip_sources()
    for what in ([TORCH, "--no-deps"], reqs):     # torch alone first: its failure is the news
        r = subprocess.run([vpy, "-m", "pip", "install", "--quiet", "--only-binary=:all:",
                            *sources, *what], capture_output=True, text=True, timeout=1800)
        if r.returncode != 0:
            said = [line.strip() for line in r.stderr.splitlines()
                    if line.startswith("ERROR") or "requested" in line]
            pytest.skip(f"cannot install {' '.join(w for w in what if w[0] != '-')} offline for "
                        f"Python {Path(python).name} from the local sources pip is configured "
                        f"with ({' '.join(sources)}, plus its find-links); pip: "
                        f"{'; '.join(said[:3]) or r.stderr[-300:]}")
    student = shutil.copytree(built / "attention-student", tmp_path / "student")
    shutil.copy(CORRECT, student / "attention.py")
    check = subprocess.run([vpy, "-m", "autograder", "check", "attention.py"], cwd=student,
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0 and "All public checks pass" in check.stdout, check.stdout
    out, here = tmp_path / "new.json", tmp_path / "here.json"
    grade = subprocess.run([vpy, "-m", "autograder", "grade", "-a", "attention", str(WRONG),
                            "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                           timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert run_cli("grade", "-a", "attention", str(WRONG), "--json", str(here)).returncode == 0
    new, old = (json.loads(p.read_text())["submissions"][0] for p in (out, here))
    assert (new["score"], new["max_score"]) == (old["score"], old["max_score"])
