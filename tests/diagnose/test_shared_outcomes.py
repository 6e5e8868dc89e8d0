"""The grading processes of a class run share the known mistakes' variant outcomes they compute
(`diagnose.shared_outcomes`): what one computed, another reads instead of computing it again,
and names the same mistakes with the same hints; what it reads is checked as a worker's reply
is, and a file that does not read only costs the time of computing it."""
from __future__ import annotations

import json
import struct

import pytest
import torch

from helpers import SUBMISSIONS

from autograder.diagnose import shared_outcomes, variants
from autograder.diagnose.shared_outcomes import MAGIC, SUFFIX, SharedOutcomes

REALWORLD = SUBMISSIONS / "realworld"


def _named(result) -> dict:
    return {(qid, c.name): (c.status, c.score, c.hint, c.diagnosis)
            for qid, q in result.questions.items() for c in q.cases}


@pytest.fixture
def fresh_process(monkeypatch):
    """This process as a grading process of its own would be: no variant outcome cached yet."""
    def start(folder, tag):
        monkeypatch.setattr(variants.VariantRunner, "_outcomes", {})
        monkeypatch.setattr(variants.VariantRunner, "_stacks", {})
        shared_outcomes.share_outcomes(folder, tag)
        return shared_outcomes.shared()
    yield start
    shared_outcomes.share_outcomes(None)


def test_what_one_grading_process_computed_another_reads_and_names_alike(grade, tmp_path,
                                                                        fresh_process):
    path = REALWORLD / "block_after_norm_gelu_mask_view.py"
    first = fresh_process(tmp_path, "first")
    graded_first = grade(path)
    assert first.computed > 0 and first.reused == 0
    first.publish()
    assert list(tmp_path.glob(f"first-*{SUFFIX}"))

    second = fresh_process(tmp_path, "second")
    graded_second = grade(path)
    # Every outcome the second needed was there: none computed again.
    assert second.reused > 0 and second.computed == 0
    assert _named(graded_second) == _named(graded_first)
    assert any(c.diagnosis for q in graded_second.questions.values() for c in q.cases)


def test_a_process_reads_only_the_others_files_and_skips_what_does_not_read(tmp_path):
    from autograder.sandbox.protocol import encode_outcome

    buffers: list[bytes] = []
    node = encode_outcome({"status": "ok", "output": torch.ones(2, 2)}, buffers)
    key = ("ref.py", "wrong_axis", 0, b"\x01\x02", False)
    mine = SharedOutcomes(tmp_path, "mine")
    mine.add(key, node, buffers)
    mine.publish()
    assert mine.take_in() == 0 and mine.get(key) is None     # its own file is not read back

    other = SharedOutcomes(tmp_path, "other")
    assert other.take_in() == 1
    got = other.get(key)
    assert torch.equal(got["output"], torch.ones(2, 2)) and other.reused == 1
    assert other.get(key) is None       # taken once: the process caches it from here on

    # Not a file of outcomes, a cut one, and an entry that is no outcome: nothing is held, and
    # the outcome is computed where it is needed.
    (tmp_path / f"x-1{SUFFIX}").write_bytes(b"not outcomes")
    (tmp_path / f"x-2{SUFFIX}").write_bytes(MAGIC + struct.pack(">Q", 10**6) + b"[")
    bad = json.dumps([["ref.py", "forged", 0, "03", False, {"status": "perfect"}, []]]).encode()
    (tmp_path / f"x-3{SUFFIX}").write_bytes(MAGIC + struct.pack(">Q", len(bad)) + bad)
    third = SharedOutcomes(tmp_path, "third")
    assert third.take_in() == 2         # mine's entry, and the one that is no outcome
    assert third.get(("ref.py", "forged", 0, b"\x03", False)) is None
    assert third.reused == 0


def test_a_killed_runs_folder_of_outcomes_goes_with_the_next_run(tmp_path, monkeypatch):
    """A run killed outright cannot remove its folder: the next run removes those whose
    process is gone, and leaves a live run's alone."""
    import os
    import subprocess
    import tempfile

    from autograder.course.batch import OUTCOMES_PREFIX, outcomes_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()         # its pid names no process now
    stale = tmp_path / f"{OUTCOMES_PREFIX}{gone.pid}-abc"
    stale.mkdir()
    (stale / "1-1.outcomes").write_bytes(b"x")
    live = tmp_path / f"{OUTCOMES_PREFIX}{os.getppid()}-def"
    live.mkdir()
    other = tmp_path / "autograder-outcomes-notes"
    other.mkdir()
    mine = outcomes_folder()
    assert not stale.exists() and live.exists() and other.exists()
    assert os.path.basename(mine).startswith(f"{OUTCOMES_PREFIX}{os.getpid()}-")
    assert os.stat(mine).st_mode & 0o777 == 0o700
