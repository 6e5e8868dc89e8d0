"""Nothing a submission does is planted in the Python installation.

`write_customize_and_conftest_files.py` writes sitecustomize.py, usercustomize.py and a `.pth`
file into every site-packages folder it can find, the user site included; `site` would run them
at the start of every later interpreter, the grader's included. After grading it at `namespaces`
and at `user`, the real files of the installation (the venv's and the base interpreter's
site-packages and standard library, the user site) are exactly what they were, with no
exemption, and a fresh interpreter starts without running planted code.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS

ATTACK = SUBMISSIONS / "hostile" / "write_customize_and_conftest_files.py"
# What `site` runs at start-up: these names, in any folder on the path of an interpreter.
STARTUP = ("sitecustomize.py", "usercustomize.py")
PLANTED = ("sitecustomize.py", "usercustomize.py", "zzz_hostile_autograder.pth", "conftest.py")


def _installation_dirs() -> list[Path]:
    """The folders of the venv's and the base interpreter's installation that `site` reads."""
    dirs = set()
    for base in {sys.prefix, sys.base_prefix}:
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            dirs.add(sysconfig.get_path(key, vars={"base": base, "platbase": base,
                                                  "installed_base": base,
                                                  "installed_platbase": base}))
    dirs |= set(site.getsitepackages()) | {site.getusersitepackages()}
    dirs |= {p for p in sys.path if p and not p.startswith(str(ROOT) + os.sep)
             and Path(p).is_dir() and "site-packages" in p}
    return sorted(Path(d) for d in dirs)


def _state() -> dict[str, str]:
    """Every start-up file (.pth, site/usercustomize) and every file a planted name would take,
    with a digest of its content; a folder's absence is part of the state too."""
    state = {}
    for d in _installation_dirs():
        if not d.is_dir():
            state[str(d)] = "absent"
            continue
        for p in d.iterdir():
            if p.suffix == ".pth" or p.name in STARTUP or p.name in PLANTED:
                state[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return state


def _grade(level: str, tmp_path: Path) -> dict:
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(ATTACK, folder / ATTACK.name)
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "autograder", "grade", "-a", "attention", str(folder),
           "--json", str(out), "--sandbox", level, "--jobs", "1"]
    if level == "user":
        # A container without bubblewrap: in a private mount namespace, bwrap is /bin/false.
        bwrap = shutil.which("bwrap")
        hide = f"mount --bind /bin/false {bwrap} && " if bwrap else ""
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{hide}exec "$@"',
               "sh", *cmd]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "HOSTILE_CUSTOMIZE_EXECUTED" not in r.stderr
    [row] = json.loads(out.read_text())["submissions"]
    return row


@pytest.mark.parametrize("level", ["namespaces", "user"])
def test_nothing_is_planted_in_the_python_installation(level, tmp_path):
    if level == "user" and os.geteuid() != 0:
        pytest.skip("the `user` level is root's (without root there is no such level)")
    if level == "namespaces" and not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed (`make system-deps` installs it)")
    dirs = _installation_dirs()
    assert any(d.name == "site-packages" and d.is_dir() for d in dirs), dirs   # looks at some
    before = _state()
    row = _grade(level, tmp_path)
    assert row["score"] == 0     # graded (every answer of this file is wrong), not skipped
    after = _state()
    assert after == before, {k: after.get(k) for k in set(after) ^ set(before)
                             | {k for k in after if after[k] != before.get(k)}}
    # and a fresh interpreter, the venv's and the base one, runs nothing planted
    for python in {sys.executable, os.path.join(sys.base_prefix, "bin", "python3")}:
        r = subprocess.run([python, "-c", "pass"], capture_output=True, text=True, timeout=120)
        assert "HOSTILE_CUSTOMIZE_EXECUTED" not in r.stderr, python
