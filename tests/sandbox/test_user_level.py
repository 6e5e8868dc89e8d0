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
import tempfile

import pytest

from helpers import (AUTOGRADED_MAX, GRADED, MAX_SCORE, QUESTIONS, ROOT, RUN_TOKEN, SUBMISSIONS,
                     autograded, flag_only_assignment, own_processes, require_level, run_cli,
                     run_ipc_key, settled)

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
import ctypes, os

_libc = ctypes.CDLL(None, use_errno=True)


def _leave():
    for d in ("/tmp", "/var/tmp", "/dev/shm", os.getcwd()):
        try:
            with open(f"{d}/hostile_leftover_@TOKEN@", "w") as f:
                f.write("left")
        except OSError:
            pass
    _libc.shmget(@KEY@, 1 << 20, 0o666 | 0o1000)      # IPC_CREAT, never removed
    _libc.semget(@KEY@, 1, 0o666 | 0o1000)
    _libc.msgget(@KEY@, 0o666 | 0o1000)
    try:        # a POSIX shared memory object (multiprocessing.shared_memory's kind)
        os.close(os.open("/dev/shm/hostile_posix_@TOKEN@", os.O_CREAT | os.O_RDWR, 0o666))
    except OSError:
        pass
    # No process is left: none can be started besides the worker (the seccomp filter kills a
    # worker that tries; tests/test_hostile.py has those attacks).


_leave()


def softmax(x, dim=-1):
    return _softmax(x, dim)
'''

SEEKER = '''
import ctypes, os

_libc = ctypes.CDLL(None, use_errno=True)


def _found():
    found = [f"{d}/hostile_leftover_@TOKEN@" for d in ("/tmp", "/var/tmp", "/dev/shm")
             if os.path.exists(f"{d}/hostile_leftover_@TOKEN@")]
    found += [f for f in ("/dev/shm/hostile_posix_@TOKEN@",) if os.path.exists(f)]
    for kind, get in (("shm", lambda: _libc.shmget(@KEY@, 0, 0)),
                      ("sem", lambda: _libc.semget(@KEY@, 0, 0)),
                      ("msg", lambda: _libc.msgget(@KEY@, 0))):
        if get() >= 0:
            found.append(f"System V {kind} @KEY@")
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"sleep\\x00@SLEEP@" in f.read():
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


# This run's own names: other checkouts may run the same attacks on this machine right now.
KEY = run_ipc_key(0x12)
SLEEP = f"1047.{KEY}"      # a sleep's seconds, unique to this run (the leaver's process)


def _attack(source: str) -> str:
    return source.replace("@TOKEN@", RUN_TOKEN).replace("@KEY@", str(KEY)) \
        .replace("@SLEEP@", SLEEP)


def _build(folder) -> None:
    folder.mkdir()
    attacks = {"a_reader.py": READER.format(secrets=[str(p) for p in SECRETS], root=str(ROOT),
                                            secret_text=SECRET_TEXT),
               "b_leaver.py": _attack(LEAVER), "c_seeker.py": _attack(SEEKER)}
    for name, attack in attacks.items():
        (folder / name).write_text(HONEST + "\n# --- the attack ---\n" + attack)
    for f in sorted((SUBMISSIONS / "correct").glob("*.py"))[:2]:
        shutil.copy(f, folder / f"zz_honest_{f.name}")


@pytest.fixture
def grader_tmp():
    """The grader's TMPDIR for one test: its staging folders land where only this run looks.
    Traversable by all, like /tmp (a worker user's file system is made from it)."""
    folder = tempfile.mkdtemp(prefix=f"autograder-test-{RUN_TOKEN}-")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _in_container(*args: str, timeout: int = 900,
                  env: dict | None = None) -> subprocess.CompletedProcess:
    """`autograder ARGS` in a private mount namespace where bubblewrap cannot start."""
    bwrap = shutil.which("bwrap")
    hide = f"mount --bind /bin/false {bwrap} && " if bwrap else ""
    script = f'{hide}exec "$@"'
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           "sh", sys.executable, "-m", "autograder", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _snapshot(grader_tmp: str) -> dict:
    """This run's System V objects (kind, key, id: its own key) and leftover files (named
    with its token, and the grader's staging folders in its own TMPDIR)."""
    ipc = set()
    for kind in ("shm", "sem", "msg"):
        with open(f"/proc/sysvipc/{kind}") as f:
            ipc |= {(kind, *line.split()[:2]) for line in list(f)[1:]
                    if line.split()[0] == str(KEY)}
    files = {f"{d}/{n}" for d in ("/tmp", "/var/tmp", "/dev/shm")
             for n in os.listdir(d) if n.startswith("hostile_") and RUN_TOKEN in n}
    files |= {f"{grader_tmp}/{n}" for n in os.listdir(grader_tmp)
              if n.startswith("autograder-root-")}
    return {"ipc": ipc, "files": files}


def _sandbox_processes() -> list[str]:
    """The leaver's process, and any process of a sandbox user, among this run's own (other
    checkouts may be grading on this machine at the same time)."""
    return [f"{p['uid']} {p['pid']} {p['args']}" for p in own_processes()
            if f"sleep {SLEEP}" in p["args"] or 61000 <= p["uid"] < 61100]


def _nothing_left(before: dict, grader_tmp: str) -> None:
    assert settled(_sandbox_processes, polls=50) == []
    after = _snapshot(grader_tmp)
    assert after["ipc"] <= before["ipc"], after["ipc"] - before["ipc"]
    assert after["files"] <= before["files"], after["files"] - before["files"]


def _check(data: dict) -> None:
    assert sorted(data) == ["a_reader.py", "b_leaver.py", "c_seeker.py",
                            *sorted(n for n in data if n.startswith("zz_honest_"))]
    for name, sub in data.items():
        feedback = {q: v["feedback"] for q, v in sub["questions"].items()}
        assert sub["score"] == AUTOGRADED_MAX and sub["max_score"] == MAX_SCORE, (name, feedback)
        assert list(autograded(sub["questions"])) == QUESTIONS


@pytest.mark.slow
def test_user_level_in_a_container_without_bubblewrap(tmp_path, grader_tmp):
    require_level("user")
    r = _in_container("sandbox")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("level: user"), r.stdout   # auto falls back to `user`
    assert "file system: made by the fork server" in r.stdout
    folder = tmp_path / "class"
    _build(folder)
    before = _snapshot(grader_tmp)
    out = tmp_path / "r.json"
    r = _in_container("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder),
                      "--json", str(out), "--sandbox", "user", "--jobs", "1",
                      "--limit", "question_seconds=20", "--limit", "audit_hook=0",
                env={"TMPDIR": grader_tmp})  # native code (ctypes): the level alone
    assert r.returncode in GRADED, r.stderr[-3000:]
    assert "sandbox: user" in r.stdout
    _check({os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]})
    _nothing_left(before, grader_tmp)


@pytest.mark.slow
def test_namespaces_level_hides_the_same_and_leaves_nothing(tmp_path, grader_tmp):
    require_level("namespaces")
    folder = tmp_path / "class"
    _build(folder)
    before = _snapshot(grader_tmp)
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder), "--json",
                str(out), "--sandbox", "namespaces", "--jobs", "1",
                "--limit", "question_seconds=20", "--limit", "audit_hook=0",
                env={"TMPDIR": grader_tmp})  # native code (ctypes): the level alone
    assert r.returncode in GRADED, r.stderr[-3000:]
    _check({os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]})
    _nothing_left(before, grader_tmp)


@pytest.mark.slow
def test_rlimits_level_as_root_still_leaves_nothing(tmp_path, grader_tmp):
    """At `rlimits` the worker is the grader's own user (here root): it can read the project,
    so the reader is left out; what this level does guarantee as root is that nothing it
    creates survives (its own PID, mount and IPC namespaces)."""
    if os.geteuid() != 0:
        pytest.skip("without root, `rlimits` has no namespaces: files and IPC objects a worker "
                    "leaves in shared places survive it (stated in docs/how-grading-works.md)")
    folder = tmp_path / "class"
    _build(folder)
    (folder / "a_reader.py").unlink()
    before = _snapshot(grader_tmp)
    out = tmp_path / "r.json"
    r = run_cli("grade", "-a", str(flag_only_assignment(tmp_path)), str(folder), "--json",
                str(out), "--sandbox", "rlimits", "--jobs", "1",
                "--limit", "question_seconds=20", "--limit", "audit_hook=0",
                env={"TMPDIR": grader_tmp})  # native code (ctypes): the level alone
    assert r.returncode in GRADED, r.stderr[-3000:]
    data = {os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]}
    for name, sub in data.items():
        assert sub["score"] == AUTOGRADED_MAX and sub["max_score"] == MAX_SCORE, \
            (name, sub["questions"]["softmax"])
    _nothing_left(before, grader_tmp)


def test_gradescope_setup_leaves_only_the_interpreter_and_sandbox_readable(tmp_path):
    """setup.sh (run as root in the image) unzips everything readable to all; afterwards the
    sandbox's user may read the interpreter and the sandbox package, nothing else of source/."""
    from autograder.platforms.build import SETUP_PERMISSIONS

    root = tmp_path / "autograder"
    files = ["venv/bin/python3", "venv/lib/python3.11/site-packages/torch/__init__.py",
             "source/autograder/__init__.py", "source/autograder/grading/grade.py",
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
