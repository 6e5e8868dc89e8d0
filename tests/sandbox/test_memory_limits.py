"""The memory limit covers memory outside the address space: System V and POSIX shared memory
and files in the working directory. A submission that tries to hold more than `memory_mb` that
way gets the memory status on the question whose function does it (not full marks, not a time
limit), and what one worker leaves is gone before the next starts.

The submissions are built here from the hostile corpus's honest file: only `softmax` attacks,
the other questions use private helpers and keep full marks.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, GRADED, LEVELS, MAX_SCORE, QUESTIONS, RUN_TOKEN, SUBMISSIONS,
                     flag_only_assignment, require_level, run_cli, run_ipc_key)

from autograder.feedback.contract import submission_json

HONEST = (SUBMISSIONS / "hostile" / "honest.py").read_text()

SYSV_PRELUDE = '''
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmdt.argtypes = [ctypes.c_void_p]
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]


def _fail():
    e = ctypes.get_errno()
    raise OSError(e, os.strerror(e))


def _segment(key, size):
    """A System V segment of `size` bytes, every page touched, then detached (kept)."""
    sid = _libc.shmget(key, size, 0o666 | 0o1000)     # IPC_CREAT
    if sid < 0:
        _fail()
    addr = _libc.shmat(sid, None, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        _fail()
    ctypes.memset(addr, 1, size)
    _libc.shmdt(addr)
    return sid
'''

ATTACKS = {
    # ~1 GiB of System V shared memory in 64 MiB segments, detached: none of it is in the
    # worker's address space once detached. (Keys of this run's own, not IPC_PRIVATE, so that
    # what is left can be told from other runs' segments on this machine.)
    "sysv_shm_1gib.py": SYSV_PRELUDE + '''
_HELD = []


def softmax(x, dim=-1):
    while len(_HELD) < 16:
        _HELD.append(_segment(@KEY@ + 1 + len(_HELD), 64 << 20))
    return _softmax(x, dim)
''',
    # ~1 GiB of POSIX shared memory (files in /dev/shm, 8 MiB each: under the file size
    # limit), each mapping closed after filling.
    "posix_shm_1gib.py": '''
import mmap
import os

_HELD = []


def softmax(x, dim=-1):
    while len(_HELD) < 128:
        # What multiprocessing.shared_memory does, without its tracker process (no process
        # besides the worker is allowed).
        path = f"/dev/shm/psm_@TOKEN@_{len(_HELD)}"
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        os.ftruncate(fd, 8 << 20)
        with mmap.mmap(fd, 8 << 20) as m:
            m[:] = b"\\1" * (8 << 20)
        os.close(fd)
        _HELD.append(path)
    return _softmax(x, dim)
''',
    # ~1 GiB of files in the working directory, 8 MiB each (under the file size limit).
    "fill_working_directory.py": '''
import os


def softmax(x, dim=-1):
    block = b"\\1" * (8 << 20)
    for i in range(128):
        name = f"blob{i}"
        if not os.path.exists(name):
            with open(name, "wb") as f:
                f.write(block)
    return _softmax(x, dim)
''',
    # The same through /tmp, which is not the working directory.
    "fill_tmp.py": '''
import os


def softmax(x, dim=-1):
    block = b"\\1" * (8 << 20)
    for i in range(128):
        name = f"/tmp/hostile_@TOKEN@_blob{i}"
        if not os.path.exists(name):
            with open(name, "wb") as f:
                f.write(block)
    return _softmax(x, dim)
''',
    # Fills its working directory, ignores the error, then spins holding it all.
    "fill_then_spin.py": '''
import os


def softmax(x, dim=-1):
    block = b"\\1" * (8 << 20)
    try:
        for i in range(128):
            with open(f"spin{i}", "wb") as f:
                f.write(block)
    except OSError:
        pass
    while True:
        pass
''',
}

# Graded first: leaves a System V segment, a POSIX segment and files behind on purpose.
LEAVER = SYSV_PRELUDE + '''
import os


def softmax(x, dim=-1):
    try:
        _segment(@KEY@, 1 << 20)
        with open("/dev/shm/hostile_leftover_@TOKEN@", "wb") as f:
            f.write(b"left")
        for d in ("/tmp", "/var/tmp"):
            with open(f"{d}/hostile_leftover_@TOKEN@", "w") as f:
                f.write("left")
    except OSError:
        pass
    return _softmax(x, dim)
'''

# Graded next: finds anything of the first one's and then answers wrongly (so it would show).
SEEKER = SYSV_PRELUDE + '''
import os


def _found():
    if _libc.shmget(@KEY@, 0, 0) >= 0:
        return True
    return any(os.path.exists(f"{d}/hostile_leftover_@TOKEN@")
               for d in ("/tmp", "/var/tmp", "/dev/shm"))


def softmax(x, dim=-1):
    if _found():
        return _softmax(x, dim) * 0.5
    return _softmax(x, dim)
'''


# The attacks' names and System V keys are this run's own: other checkouts may run the same
# attacks on this machine at the same time, and only what this run leaves is looked for.
KEY = run_ipc_key(0x20)          # the leaver's segment; the 1 GiB attack uses the next 16


def _build(folder, files: dict[str, str]) -> None:
    folder.mkdir()
    for name, attack in files.items():
        attack = attack.replace("@KEY@", str(KEY)).replace("@TOKEN@", RUN_TOKEN)
        (folder / name).write_text(HONEST + "\n# --- the attack ---\n" + attack)


def _grade(folder, level: str, out) -> dict:
    # The attacks reach shared memory through ctypes, which the worker's audit hook refuses
    # first; with the hook off (audit_hook=0) they test what the sandbox level alone holds
    # against native code.
    r = run_cli("grade", "-a", str(flag_only_assignment(folder.parent)), str(folder), "--json", str(out), "--sandbox", level,
                "--jobs", "1", "--limit", "memory_mb=512", "--limit", "question_seconds=8", "--limit", "audit_hook=0",
                timeout=900)
    assert r.returncode in GRADED, r.stderr[-3000:]
    return {os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]}


def _own_segments() -> set[int]:
    """This run's System V segments (keys KEY to KEY + 16) that exist on this machine."""
    with open("/proc/sysvipc/shm") as f:
        next(f)
        keys = {int(line.split()[0]) for line in f}
    return keys & set(range(KEY, KEY + 17))


def _own_files() -> list[str]:
    """Files this run's attacks make in the machine's shared folders."""
    return [f"{d}/{n}" for d in ("/tmp", "/var/tmp", "/dev/shm") for n in os.listdir(d)
            if RUN_TOKEN in n]


def _level(level: str) -> str:
    """Skip (saying why) where the level is impossible here, fail where it should work;
    `rlimits` without root has no namespaces: what it leaves in shared places is bounded by
    nothing but the machine (stated in docs/how-grading-works.md)."""
    require_level(level)
    if level == "rlimits" and os.geteuid() != 0:
        pytest.skip("rlimits without root has no namespaces: shared memory and files there are "
                    "bounded by nothing but the machine (stated in docs/how-grading-works.md)")
    return level


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_memory_outside_the_address_space_gets_the_memory_status(tmp_path, level):
    _level(level)
    folder = tmp_path / "class"
    _build(folder, {**ATTACKS, "zz_honest.py": "\n"})
    data = _grade(folder, level, tmp_path / "r.json")
    assert sorted(data) == sorted([*ATTACKS, "zz_honest.py"])
    for name in ATTACKS:
        qs = data[name]["questions"]
        assert qs["softmax"]["status"] == "memory limit", (name, qs["softmax"]["feedback"])
        assert qs["softmax"]["score"] == 0, name
        assert "time limit" not in qs["softmax"]["feedback"]
        for qid in QUESTIONS[1:]:
            assert qs[qid]["score"] == qs[qid]["max_score"], (name, qid, qs[qid]["feedback"])
    assert data["zz_honest.py"]["score"] == AUTOGRADED_MAX
    assert data["zz_honest.py"]["max_score"] == MAX_SCORE
    # Nothing of it is left on this machine.
    assert _own_segments() == set()
    assert _own_files() == []


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_what_one_worker_leaves_is_gone_for_the_next(tmp_path, level):
    _level(level)
    folder = tmp_path / "class"
    _build(folder, {"a_leaver.py": LEAVER, "b_seeker.py": SEEKER})
    data = _grade(folder, level, tmp_path / "r.json")
    for name in ("a_leaver.py", "b_seeker.py"):
        assert data[name]["score"] == AUTOGRADED_MAX and data[name]["max_score"] == MAX_SCORE, \
            (name, {q: v["feedback"] for q, v in data[name]["questions"].items()})
    assert _own_segments() == set()
    assert _own_files() == []


def test_the_sandbox_says_what_bounds_memory():
    r = run_cli("sandbox")
    assert r.returncode == 0, r.stderr
    line = next(s for s in r.stdout.splitlines() if s.startswith("memory bounded by: "))
    assert "address space (rlimit)" in line
    if os.geteuid() == 0:
        # As root every level here gives workers their own IPC namespace and tmpfs.
        assert "own IPC namespace" in line and "tmpfs capped" in line


def test_a_full_tmpfs_is_a_memory_error_not_a_crash():
    from autograder.sandbox.execute import is_memory_error

    assert is_memory_error(OSError(28, "No space left on device"))
    assert is_memory_error(OSError(12, "Cannot allocate memory"))
    assert not is_memory_error(OSError(2, "No such file or directory"))


@pytest.mark.parametrize("level", [lv for lv in LEVELS if lv != "rlimits"])
def test_without_worker_namespaces_what_a_worker_leaves_is_removed(level):
    """Where workers cannot have mount and IPC namespaces of their own (bubblewrap without
    root), the fork server removes the IPC objects and temporary files of the worker's user
    after each worker. Shared memory is then not capped while the worker runs (docs/how-grading-works.md)."""
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import grade_submission
    from autograder.sandbox import Sandbox

    require_level(level)
    if os.geteuid() != 0:
        pytest.skip("without root the worker user is the grader's own: tried by the levels")
    folder = Path(tempfile.mkdtemp())
    assignment = load_assignment(str(flag_only_assignment(folder)))
    limits = assignment.limits.override({"question_seconds": 20, "memory_mb": 512,
                                        "audit_hook": 0})  # ctypes: the level alone
    sandbox = Sandbox(level, worker_namespaces=False)
    try:
        assert not sandbox.mechanisms["ipcns"] and "removed after it" in sandbox.memory
        _build(folder / "class", {"a_leaver.py": LEAVER, "b_seeker.py": SEEKER})
        for name in ("a_leaver.py", "b_seeker.py"):
            result = submission_json(grade_submission(assignment, folder / "class" / name,
                                                      sandbox, limits))
            assert result["score"] == AUTOGRADED_MAX and result["max_score"] == MAX_SCORE, \
                (name, {q: v["feedback"] for q, v in result["questions"].items()})
    finally:
        sandbox.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert _own_segments() == set()
    assert _own_files() == []


# Memory no rlimit counts: anonymous memory files (memfd) written and never mapped are outside
# the address space, under the file size limit each, and in no capped tmpfs. Only a memory
# cgroup around the sandbox bounds them.
MEMFD_HOG = '''
import os

_HELD = []


def softmax(x, dim=-1):
    block = b"x" * (8 << 20)
    for _ in range(192):        # 1.5 GiB in files of 8 MiB, kept open
        fd = os.memfd_create("hog")
        os.write(fd, block)
        _HELD.append(fd)
    return _softmax(x, dim)
'''


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_the_sandbox_cgroup_bounds_memory_no_rlimit_counts(tmp_path, level):
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import grade_submission
    from autograder.sandbox import Sandbox

    _level(level)
    sandbox = Sandbox(level)
    try:
        if sandbox.group is None:
            pytest.skip("no memory cgroup can be made here (not root, or /sys/fs/cgroup is "
                        "read-only): `autograder sandbox` says the rlimits bound memory alone")
        assert "memory cgroup" in sandbox.memory
        _build(tmp_path / "class", {"memfd_hog.py": MEMFD_HOG})
        assignment = load_assignment(str(flag_only_assignment(tmp_path)))
        limits = assignment.limits.override({"memory_mb": 256, "question_seconds": 20})
        result = submission_json(grade_submission(assignment, tmp_path / "class" / "memfd_hog.py",
                                                  sandbox, limits))
        softmax = result["questions"]["softmax"]
        assert softmax["status"] == "memory limit" and softmax["score"] == 0, softmax
        assert "memory cgroup" in softmax["feedback"]
        for qid in QUESTIONS[1:]:     # the next worker starts in the same cgroup, unhindered
            q = result["questions"][qid]
            assert q["score"] == q["max_score"], (qid, q["feedback"])
    finally:
        sandbox.close()
    assert not sandbox.group.path.exists()
