"""Every level hides the reference, and nothing a worker creates survives the run.

The `user` level is what a Gradescope container without user namespaces gives: root, no
bubblewrap. It is tried here in a simulated container: a private mount namespace (`unshare -m`)
in which the bubblewrap binary is /bin/false, so the sandbox cannot start it. Hostile
submissions, graded in one batch with honest ones, look for the project's secrets (the reference,
the question files with hidden cases, snapshots, the mistakes catalogue) and leave files, IPC
objects and processes behind; the next submission looks for those. A submission that finds
anything raises with the list of what it found, so its feedback shows it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from helpers import QUESTIONS, ROOT, SUBMISSIONS, flag_only_assignment, run_cli

HONEST = (SUBMISSIONS / "hostile" / "honest.py").read_text()
ASSIGNMENT = ROOT / "assignments" / "attention"
SECRETS = sorted(
    [ROOT / "reference" / "attention.py", ROOT / "reference",
     *ASSIGNMENT.glob("tests/*.py"), *ASSIGNMENT.glob("snapshots/*"),
     *(ROOT / "assignments").glob("*/mistakes.py"), ROOT / "assignments", ROOT / ".git"])
SECRET_TEXT = "def scaled_dot_product_attention"   # the reference's own source

READER = '''
import glob, os


def _found():
    found = []
    for path in {secrets!r}:
        try:
            if os.path.isdir(path):
                if os.listdir(path):
                    found.append(path)
            else:
                with open(path) as f:
                    f.read(1)
                found.append(path)
        except OSError:
            pass
    for path in glob.glob({root!r} + "/**/*.py", recursive=True)[:2000]:
        if "/autograder/sandbox/" in path or "site-packages" in path:
            continue
        try:
            with open(path, errors="replace") as f:
                if {secret_text!r} in f.read():
                    found.append(path)
        except OSError:
            pass
    return found


def softmax(x, dim=-1):
    found = _found()
    if found:
        raise RuntimeError("found: " + ", ".join(found[:20]))
    return _softmax(x, dim)
'''

LEAVER = '''
import ctypes, os, subprocess
from multiprocessing import shared_memory

_libc = ctypes.CDLL(None, use_errno=True)


def _leave():
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.getcwd()):
        try:
            with open(f"{d}/hostile_leftover", "w") as f:
                f.write("left")
        except OSError:
            pass
    _libc.shmget(0x4712, 1 << 20, 0o666 | 0o1000)      # IPC_CREAT, never removed
    _libc.semget(0x4712, 1, 0o666 | 0o1000)
    _libc.msgget(0x4712, 0o666 | 0o1000)
    try:
        shm = shared_memory.SharedMemory(name="hostile_posix", create=True, size=4096)
        shm.close()
    except OSError:
        pass
    subprocess.Popen(["sleep", "1047"], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_leave()


def softmax(x, dim=-1):
    return _softmax(x, dim)
'''

SEEKER = '''
import ctypes, os

_libc = ctypes.CDLL(None, use_errno=True)


def _found():
    found = [f"{d}/hostile_leftover" for d in ("/tmp", "/var/tmp", "/dev/shm")
             if os.path.exists(f"{d}/hostile_leftover")]
    found += [f for f in ("/dev/shm/hostile_posix",) if os.path.exists(f)]
    for kind, get in (("shm", lambda: _libc.shmget(0x4712, 0, 0)),
                      ("sem", lambda: _libc.semget(0x4712, 0, 0)),
                      ("msg", lambda: _libc.msgget(0x4712, 0))):
        if get() >= 0:
            found.append(f"System V {kind} 0x4712")
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"sleep\\x001047" in f.read():
                    found.append(f"process {pid}")
        except OSError:
            pass
    return found


def softmax(x, dim=-1):
    found = _found()
    if found:
        raise RuntimeError("found: " + ", ".join(found))
    return _softmax(x, dim)
'''


def _build(folder) -> None:
    folder.mkdir()
    attacks = {"a_reader.py": READER.format(secrets=[str(p) for p in SECRETS], root=str(ROOT),
                                            secret_text=SECRET_TEXT),
               "b_leaver.py": LEAVER, "c_seeker.py": SEEKER}
    for name, attack in attacks.items():
        (folder / name).write_text(HONEST + "\n# --- the attack ---\n" + attack)
    for f in sorted((SUBMISSIONS / "correct").glob("*.py"))[:2]:
        shutil.copy(f, folder / f"zz_honest_{f.name}")


def _in_container(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    """`autograder ARGS` in a private mount namespace where bubblewrap cannot start."""
    bwrap = shutil.which("bwrap")
    hide = f"mount --bind /bin/false {bwrap} && " if bwrap else ""
    script = f'{hide}exec "$@"'
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           "sh", sys.executable, "-m", "autograder", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _snapshot() -> dict:
    """System V objects (kind, key, id) and leftover-looking files of this machine."""
    ipc = set()
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as f:
            ipc |= {(kind, *line.split()[:2]) for line in list(f)[1:]}
    return {"ipc": ipc,
            "files": {f"{d}/{n}" for d in ("/tmp", "/var/tmp", "/dev/shm")
                      for n in os.listdir(d) if n.startswith(("hostile_", "autograder-root-"))}}


def _sandbox_processes() -> list[str]:
    """The leaver's process, and any process of a sandbox user started from this checkout
    (other checkouts may be grading on this machine at the same time)."""
    out = subprocess.run(["ps", "-eo", "uid=,pid=,args="], capture_output=True, text=True).stdout
    left = []
    for line in out.splitlines():
        uid, _, rest = line.strip().partition(" ")
        if "sleep 1047" in rest or (uid.isdigit() and 61000 <= int(uid) < 61100
                                    and str(ROOT) in rest):
            left.append(line.strip())
    return left


def _nothing_left(before: dict) -> None:
    deadline = time.monotonic() + 5
    while _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sandbox_processes() == []
    after = _snapshot()
    assert after["ipc"] <= before["ipc"], after["ipc"] - before["ipc"]
    assert after["files"] <= before["files"], after["files"] - before["files"]


def _check(data: dict) -> None:
    assert sorted(data) == ["a_reader.py", "b_leaver.py", "c_seeker.py",
                            *sorted(n for n in data if n.startswith("zz_honest_"))]
    for name, sub in data.items():
        feedback = {q: v["feedback"] for q, v in sub["questions"].items()}
        assert sub["score"] == sub["max_score"] == 35, (name, feedback)
        assert list(sub["questions"]) == QUESTIONS


def test_user_level_in_a_container_without_bubblewrap(tmp_path):
    r = _in_container("sandbox")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("level: user"), r.stdout   # auto falls back to `user`
    assert "file system: made by the fork server" in r.stdout
    folder = tmp_path / "class"
    _build(folder)
    before = _snapshot()
    out = tmp_path / "r.json"
    r = _in_container("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder), "--json", str(out),
                      "--sandbox", "user", "--jobs", "1", "--limit", "question_seconds=20")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sandbox: user" in r.stdout
    _check({os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]})
    _nothing_left(before)


def test_namespaces_level_hides_the_same_and_leaves_nothing(tmp_path):
    from autograder.sandbox import choose_level

    if choose_level("auto") != "namespaces":
        pytest.skip("bubblewrap is not usable on this machine: the test above covers `user`")
    folder = tmp_path / "class"
    _build(folder)
    before = _snapshot()
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder), "--json", str(out), "--sandbox",
                "namespaces", "--jobs", "1", "--limit", "question_seconds=20")
    assert r.returncode == 0, r.stderr[-3000:]
    _check({os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]})
    _nothing_left(before)


def test_rlimits_level_as_root_still_leaves_nothing(tmp_path):
    """At `rlimits` the worker is the grader's own user (here root): it can read the project,
    so the reader is left out; what this level does guarantee as root is that nothing it
    creates survives (its own PID, mount and IPC namespaces)."""
    if os.geteuid() != 0:
        pytest.skip("without root, `rlimits` has no namespaces: files and IPC objects a worker "
                    "leaves in shared places survive it (stated in the README)")
    folder = tmp_path / "class"
    _build(folder)
    (folder / "a_reader.py").unlink()
    before = _snapshot()
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder), "--json", str(out), "--sandbox",
                "rlimits", "--jobs", "1", "--limit", "question_seconds=20")
    assert r.returncode == 0, r.stderr[-3000:]
    data = {os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]}
    for name, sub in data.items():
        assert sub["score"] == sub["max_score"] == 35, (name, sub["questions"]["softmax"])
    _nothing_left(before)


def test_gradescope_setup_leaves_only_the_interpreter_and_sandbox_readable(tmp_path):
    """setup.sh (run as root in the image) unzips everything readable to all; afterwards the
    sandbox's user may read the interpreter and the sandbox package, nothing else of source/."""
    from autograder.build import SETUP_PERMISSIONS

    root = tmp_path / "autograder"
    files = ["venv/bin/python3", "venv/lib/python3.11/site-packages/torch/__init__.py",
             "source/autograder/__init__.py", "source/autograder/grade.py",
             "source/autograder/sandbox/worker.py", "source/run_autograder",
             "source/assignments/attention/reference/attention.py",
             "source/assignments/attention/tests/softmax.py",
             "source/assignments/attention/snapshots/softmax.json",
             "source/assignments/attention/mistakes.py"]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    for p in [root, *root.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    r = subprocess.run(["bash", "-c", SETUP_PERMISSIONS], env={**os.environ, "ROOT": str(root)},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    readable = {rel for rel in files if (root / rel).stat().st_mode & 0o004}
    assert readable == {"venv/bin/python3", "venv/lib/python3.11/site-packages/torch/__init__.py",
                        "source/autograder/__init__.py", "source/autograder/sandbox/worker.py"}
    for p in (root / "source").rglob("*"):
        rel = p.relative_to(root / "source")
        if rel.parts[:2] != ("autograder", "sandbox") and str(rel) != "autograder/__init__.py":
            assert p.stat().st_mode & 0o077 == 0, rel     # folders too: nothing to list
