"""A sandbox's memory cgroup is removed when the sandbox closes, whatever is still in it; one
left by a grading run that was killed is removed by the next run; and a new sandbox never
inherits a count of processes the kernel killed, which would turn the next worker's ordinary
end into "memory limit".

These make real cgroups (root, a writable /sys/fs/cgroup); elsewhere there is no group to test
and `autograder sandbox` says the rlimits bound memory alone.
"""
from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys
import textwrap

import pytest

from helpers import SUBMISSIONS

from autograder.sandbox import cgroup
from autograder.feedback.contract import submission_json

ROOT = Path(__file__).resolve().parents[2]


def _new_group() -> cgroup.Group:
    group = cgroup.make_group(cgroup.sandbox_group_name(0)) if os.geteuid() == 0 else None
    if group is None:
        pytest.skip("no memory cgroup can be made here (not root, or /sys/fs/cgroup is "
                    "read-only)")
    return group


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_removing_a_group_kills_what_is_left_in_it():
    group = _new_group()
    lingering = subprocess.Popen(["sleep", "60"], preexec_fn=group.enter)
    try:
        assert group.pids() == {lingering.pid}
        assert group.remove()
        assert not group.path.exists()
        assert lingering.wait(timeout=10) == -9
    finally:
        lingering.kill()
        lingering.wait()
        group.remove()


def test_a_killed_grading_runs_group_is_removed_by_the_next_run():
    _new_group().remove()     # skips where no group can be made
    # A grading run makes its sandbox's group, a process lives in it, and the run is killed
    # before it can close anything.
    killed_run = textwrap.dedent('''
        import os, signal, subprocess, sys
        from autograder.sandbox import cgroup
        group = cgroup.make_group(cgroup.sandbox_group_name(0))
        left = subprocess.Popen(["sleep", "60"], preexec_fn=group.enter,
                                start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        print(group.path, left.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    ''')
    run = subprocess.run([sys.executable, "-c", killed_run], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == -9, run.stderr
    path, left = run.stdout.split()
    path, left = Path(path), int(left)
    try:
        assert path.is_dir() and not _dead(left)
        group = _new_group()          # the next run
        try:
            assert not path.exists()
            assert _dead(left)
        finally:
            group.remove()
    finally:
        if not _dead(left):
            os.kill(left, 9)
        cgroup.Group(path, 1).remove()


def _limit(group: cgroup.Group) -> int:
    name = "memory.limit_in_bytes" if group.version == 1 else "memory.max"
    return int((group.path / name).read_text())


def test_the_limit_follows_each_worker_up_and_down():
    """Each worker's limit is set from what the fork server holds then: it rises as often as
    it falls (v1 with swap accounting refuses a rise past the old memory-and-swap figure unless
    that is raised first, which left a worker with less than it was promised)."""
    group = _new_group()
    try:
        for mib in (300, 900, 200, 1200, 1200, 500):
            assert group.set_limit(mib * 2**20)
            assert _limit(group) == mib * 2**20
            memsw = group.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                assert int(memsw.read_text()) == mib * 2**20
    finally:
        group.remove()


def test_a_group_is_never_made_twice_under_one_name():
    first = _new_group()
    try:
        again = cgroup.make_group(first.path.name)
        assert again is None or again.path != first.path
        if again is not None:
            again.remove()
        assert cgroup.sandbox_group_name(0) != cgroup.sandbox_group_name(0)
    finally:
        first.remove()


def test_a_new_sandbox_does_not_read_old_kills_as_its_workers(monkeypatch, tmp_path):
    """A group whose count of processes killed for its limit is not zero when the sandbox
    starts: a worker that ends itself (os._exit) is an error of the student's, not a memory
    limit."""
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import grade_submission
    from autograder.sandbox import Sandbox

    group = _new_group()
    hog = subprocess.Popen([sys.executable, "-c", "b = bytearray(400 << 20)"],
                           preexec_fn=group.enter)
    try:
        group.set_limit(64 * 2**20)
        hog.wait(timeout=60)
        assert group.oom_kills() >= 1
        group.set_limit(cgroup._UNLIMITED)    # the sandbox sets its own before each worker
        monkeypatch.setattr(cgroup, "make_group", lambda name: group)
        sandbox = Sandbox("rlimits")
        try:
            result = submission_json(grade_submission(
                load_assignment("attention"), SUBMISSIONS / "hostile" / "os_exit_in_softmax.py",
                sandbox))
        finally:
            sandbox.close()
        softmax = result["questions"]["softmax"]
        assert softmax["status"] == "error", softmax
        assert "exit code" in softmax["feedback"]
        assert not group.path.exists()
    finally:
        hog.kill()
        hog.wait()
        group.remove()
