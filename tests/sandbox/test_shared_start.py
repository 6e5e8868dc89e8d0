"""A fork server forked from the grading process (`--share-torch`, used on Gradescope) shares
its torch and nothing else.

The grading process is started with a marker in its environment and command line. The fork
server forked from it must show neither in /proc and must really share (most of its anonymous
memory shared with the grading process). Through Gradescope's entry point, a worker can open
none of the assignment's private files, the marker reaches no output, and grades are those of
a separately started fork server.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, ROOT, SUBMISSIONS, autograded, flag_only_assignment,
                     max_points)

MARKER = "MARKER-" + "5e21b7"      # never written whole in this file's source

PROBE = '''
import json, os, sys
from autograder.model.assignment import load_assignment
from autograder.sandbox import Sandbox

sandbox = Sandbox("user", share_torch=True)
sandbox.wait_ready()
pid = sandbox.proc.pid
def rollup(p):
    return {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{p}/smaps_rollup")
            if l.split(":")[0] in ("Anonymous", "Shared_Dirty", "Private_Dirty")}
print(json.dumps({"shared": sandbox.shared,
                  "environ": open(f"/proc/{pid}/environ", "rb").read().decode("latin-1"),
                  "cmdline": open(f"/proc/{pid}/cmdline", "rb").read().decode("latin-1"),
                  "memory": rollup(pid)}))
sandbox.close()
'''


def _env() -> dict:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "AUTOGRADER_TEST_SECRET": MARKER}


def test_forked_fork_server_shows_nothing_of_the_grading_process():
    r = subprocess.run([sys.executable, "-c", PROBE, "argv-" + MARKER], env=_env(),
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.splitlines()[-1])
    assert info["shared"] is True
    assert MARKER not in info["environ"] and MARKER not in info["cmdline"]
    assert info["environ"].strip("\0") == "" and info["cmdline"].strip("\0") == ""
    mem = info["memory"]
    # torch's ~140 MiB are shared with the grading process, not copied
    assert mem["Shared_Dirty"] > 100 * 1024 and mem["Private_Dirty"] < 60 * 1024, mem


PRIVATE_READER = """

import glob as _glob


def _private_files():
    found = []
    for pattern in {patterns!r}:
        for path in _glob.glob(pattern, recursive=True):
            try:
                with open(path, "rb") as f:
                    f.read(1)
                found.append(path)
            except OSError:
                pass
    return found


_FOUND = _private_files()
_correct_softmax = softmax


def softmax(x, dim=-1):
    if _FOUND:
        raise RuntimeError("found: " + "; ".join(_FOUND[:5]))
    return _correct_softmax(x, dim)
"""


def test_gradescope_run_with_a_shared_fork_server(tmp_path):
    """Through Gradescope's entry point, with a marker in Gradescope's environment: the worker
    can open none of the assignment's private files, the marker reaches no output, and the
    grades are those of a fork server started apart."""
    assignment = flag_only_assignment(tmp_path)
    patterns = [str(assignment / "tests" / "*.py"), str(assignment / "snapshots" / "*"),
                str(assignment / "mistakes.py"), str(ROOT / "reference" / "*.py")]
    reader = (SUBMISSIONS / "correct" / "reference_style.py").read_text() + \
        PRIVATE_READER.format(patterns=patterns)
    wrong = SUBMISSIONS / "wrong" / "block_pre_norm.py"
    expected = {}
    for name, source in (("reader", reader), ("wrong", wrong.read_text())):
        root = tmp_path / name / "autograder"
        (root / "submission").mkdir(parents=True)
        (root / "submission" / "attention.py").write_text(source)
        env = {**_env(), "AUTOGRADER_SANDBOX": "user"}
        r = subprocess.run([sys.executable, "-m", "autograder.platforms.gradescope", "--root", str(root),
                            "-a", str(assignment)], env=env, capture_output=True, text=True,
                           timeout=600, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        assert "fork server forked from the grading process" in r.stdout
        assert MARKER not in r.stdout + r.stderr
        results = json.loads((root / "results" / "results.json").read_text())
        assert MARKER not in json.dumps(results)
        expected[name] = {t["name"]: t["score"] for t in results["tests"]}
        if name == "reader":
            softmax = {t["name"]: t for t in results["tests"]}["softmax"]
            assert softmax["status"] == "passed", softmax["output"]
    # The same submissions graded with a separately started fork server.
    out = tmp_path / "apart.json"
    (tmp_path / "apart").mkdir()
    (tmp_path / "apart" / "reader.py").write_text(reader)
    r = subprocess.run([sys.executable, "-m", "autograder", "grade", "-a", str(assignment),
                        str(tmp_path / "apart" / "reader.py"), str(wrong), "--sandbox", "user",
                        "--json", str(out)], env=_env(), capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    # Gradescope's results count the autograded questions (the written ones: by hand, later).
    apart = {Path(s["path"]).stem: {q: v["score"] for q, v in autograded(s["questions"]).items()}
             for s in json.loads(out.read_text())["submissions"]}
    assert expected["reader"] == apart["reader"] and sum(apart["reader"].values()) == AUTOGRADED_MAX
    assert expected["wrong"] == apart["block_pre_norm"]


# What the thread variables say, and where TMPDIR is, must not decide whether the fork server
# is shared: `--share-torch` shares, with the grades of a fork server started apart.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "GOTO_NUM_THREADS")


def _grade_shared(tmp_path: Path, threads: dict, tmpdir: Path | None) -> tuple[str, dict]:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES + ("TMPDIR",)}
    env.update(threads, PYTHONPATH=str(ROOT))
    if tmpdir is not None:
        tmpdir.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(tmpdir)
    out = tmp_path / "grades.json"
    r = subprocess.run([sys.executable, "-m", "autograder", "grade", "-a", "attention",
                        str(SUBMISSIONS / "correct" / "einsum_style.py"),
                        str(SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"),
                        "--question", "softmax", "--sandbox", "user", "--share-torch",
                        "--jobs", "1", "--json", str(out)],
                       env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    scores = {Path(s["path"]).stem: s["score"] for s in json.loads(out.read_text())["submissions"]}
    return r.stdout, scores


@pytest.mark.parametrize("threads", [{}, {"OMP_NUM_THREADS": "4"},
                                     {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
                                     {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}],
                         ids=["unset", "omp4", "both2", "both1"])
def test_share_torch_whatever_the_thread_variables_say(tmp_path, threads):
    stdout, scores = _grade_shared(tmp_path, threads, None)
    assert "fork server forked from the grading process (one torch)" in stdout
    assert scores == {"einsum_style": max_points("softmax"), "softmax_no_max_subtraction": 5}


def test_share_torch_with_tmpdir_anywhere(tmp_path):
    """TMPDIR a folder of the user's own (not the system's temporary folder): the forked fork
    server makes its workers' folders in its own /tmp, as one started apart does."""
    stdout, scores = _grade_shared(tmp_path, {}, tmp_path / "my temp" / "dir")
    assert "fork server forked from the grading process (one torch)" in stdout
    assert scores == {"einsum_style": max_points("softmax"), "softmax_no_max_subtraction": 5}


def test_share_torch_says_why_it_did_not():
    """A grading process running another thread cannot fork the fork server: the sandbox's
    description says so instead of silently starting it apart."""
    probe = (
        "import threading, time\n"
        "from autograder.sandbox import Sandbox\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "s = Sandbox('user', share_torch=True)\n"
        "s.wait_ready()\n"
        "print(s.shared, s.description)\n"
        "s.close()\n")
    r = subprocess.run([sys.executable, "-c", probe], env=_env(), capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("False ")
    assert "torch not shared: the grading process runs other threads" in r.stdout
