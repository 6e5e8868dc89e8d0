"""Memory pressure of the grader's container is reported as memory, never as a time limit.

`sandbox/cgroup.py` reads the memory cgroup the grader runs in (v1 and v2 layouts, modelled
here as folders of the same files). When a worker runs out of time while that container's
unreclaimable memory is at its limit, the case says memory; an endless loop in a container with
room still says time limit.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from autograder.sandbox import cgroup
from autograder.model.limits import Limits
from autograder.feedback.plain import question_feedback

MiB = 2**20


def _v1(tmp_path: Path, path: str, limit: int, rss: int, shmem: int = 0) -> Path:
    mount = tmp_path / "cg"
    folder = mount / "memory" / path.lstrip("/")
    folder.mkdir(parents=True)
    (folder / "memory.stat").write_text(
        f"cache 999999999\nrss {rss}\nhierarchical_memory_limit {limit}\n"
        f"total_cache 999999999\ntotal_rss {rss}\ntotal_shmem {shmem}\n")
    return mount


def test_v1_reads_the_effective_limit_and_ignores_the_page_cache(tmp_path):
    mount = _v1(tmp_path, "/docker/abc", 768 * MiB, 500 * MiB, 20 * MiB)
    state = cgroup.memory_state(mount, "4:memory:/docker/abc\n0::/\n")
    assert state == cgroup.MemoryState(768 * MiB, 520 * MiB)
    assert cgroup.pressure(state) is None                 # 248 MiB free
    crowded = cgroup.MemoryState(768 * MiB, 700 * MiB)
    assert cgroup.pressure(crowded) == crowded
    assert cgroup.describe(crowded) == "700 of 768 MiB"


def test_v1_container_that_mounts_its_own_cgroup_at_the_root(tmp_path):
    """Inside a container /proc/self/cgroup may name the host's path, absent from its mount."""
    mount = _v1(tmp_path, "", 768 * MiB, 100 * MiB)
    state = cgroup.memory_state(mount, "9:memory:/docker/0123\n")
    assert state == cgroup.MemoryState(768 * MiB, 100 * MiB)


def test_v1_unlimited_is_no_state(tmp_path):
    mount = _v1(tmp_path, "/a", 9223372036854771712, 100 * MiB)
    assert cgroup.memory_state(mount, "4:memory:/a\n") is None


def test_v2_nearest_limited_ancestor(tmp_path):
    mount = tmp_path / "cg"
    leaf = mount / "box" / "job"
    leaf.mkdir(parents=True)
    (leaf / "memory.max").write_text("max\n")
    (mount / "box" / "memory.max").write_text(f"{512 * MiB}\n")
    (mount / "box" / "memory.stat").write_text(f"anon {450 * MiB}\nfile 99999999\nshmem 0\n")
    state = cgroup.memory_state(mount, "0::/box/job\n")
    assert state == cgroup.MemoryState(512 * MiB, 450 * MiB)
    assert cgroup.pressure(state) == state                # 62 MiB free, under the margin


def test_no_cgroup_is_no_state(tmp_path):
    assert cgroup.memory_state(tmp_path, "0::/\n") is None
    assert cgroup.memory_state(tmp_path, "") is None


LOOP = """
import torch

def softmax(x, dim=-1):
    while True:
        pass
"""


@pytest.mark.parametrize("crowded", [True, False])
def test_timeout_under_container_pressure_says_memory(tmp_path, assignment, sandbox, crowded,
                                                     monkeypatch):
    from autograder.grading.grade import grade_submission

    state = cgroup.MemoryState(768 * MiB, 740 * MiB) if crowded else None
    monkeypatch.setattr(cgroup, "pressure", lambda: state)
    sub = tmp_path / "attention.py"
    sub.write_text(LOOP)
    limits = Limits(question_seconds=1.5, submission_seconds=20)
    result = grade_submission(assignment, sub, sandbox, limits, questions=["softmax"])
    q = result.questions["softmax"]
    text = question_feedback(q)
    if crowded:
        assert q.status == "memory limit", text
        assert "out of memory" in text and "740 of 768 MiB" in text
        assert "loop" not in text and "time limit" not in text
    else:
        assert q.status == "timeout", text
        assert "endless loop?" in text
