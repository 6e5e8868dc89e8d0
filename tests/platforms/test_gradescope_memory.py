"""The memory of one Gradescope run is measured in a memory cgroup and printed.

`gradescope_memory.measure_run` runs the built zip's run_autograder in a fresh memory cgroup
(root on this machine makes one); the test checks the figures are real (the cgroup saw at
least one torch), that the grading process and the fork server hold one torch between them,
and that the run still grades.
"""
from __future__ import annotations

import sys

import pytest

from helpers import AUTOGRADED_MAX, SUBMISSIONS

from autograder.yardsticks.gradescope_memory import MemoryCgroup, measure_run

MiB = 2**20


@pytest.fixture(scope="module")
def zip_path(built):
    return built / "attention-gradescope.zip"    # built once for the suite (conftest.py)


def test_cgroup_is_made_and_removed():
    group, why = MemoryCgroup.create(512 * MiB)
    assert group is not None, f"this test needs a memory cgroup: {why}"
    assert group.folder.is_dir()
    group.remove()
    assert not group.folder.exists()


def test_one_run_is_measured_in_its_cgroup(zip_path):
    m = measure_run(zip_path, SUBMISSIONS / "correct" / "reference_style.py",
                    python=sys.executable, student_file="attention.py")
    assert m.results is not None and m.results["score"] == AUTOGRADED_MAX
    assert m.cgroup_peak is not None, m.why_no_cgroup
    # torch is ~140 MiB of anonymous memory per process that imports it: the grading process
    # and the fork server share one copy (two copies made it ~320 MiB)
    assert 140 * MiB < m.anon_peak <= m.cgroup_peak
    assert m.anon_peak < 260 * MiB, m.summary()
    assert m.pss_peak > 140 * MiB
    assert "MiB in its memory cgroup" in m.summary()


def test_without_a_cgroup_the_figure_says_so(zip_path):
    m = measure_run(zip_path, SUBMISSIONS / "correct" / "reference_style.py",
                    python=sys.executable, student_file="attention.py", use_cgroup=False)
    assert m.cgroup_peak is None and m.pss_peak > 140 * MiB
    assert "summed PSS of its processes; no cgroup: not asked for" in m.summary()
