"""`autograder snapshot` writes the same files on any machine: an unchanged assignment changes
no file, a new question touches only its own, and the rounded values still pass the checks."""
import copy
import json
import math
import os
import random

import pytest

from helpers import ROOT, assignment_names, cli_in_process, copy_assignment

from autograder.model.assignment import load_assignment
from autograder.authoring.snapshots import (ROUNDED_PARTS, STEP_FRACTION, record, round_value,
                                            write_snapshots)
from autograder.checking.checks import DEFAULT_TOLERANCE


def _files(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.glob("*.json"))}


@pytest.mark.parametrize("name", assignment_names())
def test_unchanged_assignment_changes_no_file(tmp_path, name):
    """The committed snapshots are what `snapshot` writes today, byte for byte: rerunning it
    on an unchanged assignment writes nothing."""
    adir = copy_assignment(tmp_path / name, name)
    before = _files(adir / "snapshots")
    r = cli_in_process("snapshot", "-a", str(adir))
    assert r.returncode == 0, r.stderr
    assert _files(adir / "snapshots") == before
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("unchanged ") for line in lines), r.stdout


def _perturbed(tree, factor: float):
    """Every computed float moved by a relative `factor` (what another machine's summation
    order or thread count does to the reference's last digits)."""
    if isinstance(tree, dict):
        if str(tree.get("dtype", "")).startswith("float") and isinstance(tree.get("data"), list):
            return {**tree, "data": [x * (1 + factor) if isinstance(x, float) else x
                                     for x in tree["data"]]}
        return {k: _perturbed(v, factor) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_perturbed(v, factor) for v in tree]
    return tree


def _moved(recording, float32: float, float64: float):
    moved = copy.deepcopy(recording)
    for entries in moved.entries.values():
        for key, entry in entries.items():
            for part in ROUNDED_PARTS:
                if part in entry:
                    text = json.dumps(entry[part])
                    factor = float64 if '"float64"' in text and '"float32"' not in text \
                        else float32
                    entry[part] = _perturbed(entry[part], factor)
    return moved


def test_another_machines_last_digits_change_no_file(tmp_path):
    """A recording whose float32 values differ by a few ulps (float64 by a few of its own)
    leaves every file as it is; a reference that really changed rewrites them."""
    adir = copy_assignment(tmp_path / "attention")
    assignment = load_assignment(adir)
    recorded = record(assignment)
    before = _files(adir / "snapshots")
    written = write_snapshots(assignment, _moved(recorded, 3e-7, 1e-15))
    assert not any(w.changed for w in written)
    assert _files(adir / "snapshots") == before
    written = write_snapshots(assignment, _moved(recorded, 1e-3, 1e-3))
    assert all(w.changed for w in written)


def test_a_new_question_touches_only_its_own_file(tmp_path):
    adir = copy_assignment(tmp_path / "attention")
    before = _files(adir / "snapshots")
    (adir / "tests" / "softmax_rows.py").write_text(
        (adir / "tests" / "softmax.py").read_text().replace('name = "softmax"',
                                                            'name = "softmax_rows"'))
    with open(adir / "assignment.toml", "a") as f:
        f.write('\n[[question]]\nid = "softmax_rows"\nfunctions = ["softmax"]\n')
    r = cli_in_process("snapshot", "-a", str(adir))
    assert r.returncode == 0, r.stderr
    after = _files(adir / "snapshots")
    assert set(after) - set(before) == {"softmax_rows.json"}
    assert {k: after[k] for k in before} == before
    assert after["softmax_rows.json"][0] == before["softmax.json"][0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_stays_well_inside_the_tolerance(dtype):
    """Rounded values move by at most a hundredth of the tolerance they are checked with
    (strict float64 included), and carry no more digits than that step needs."""
    rtol, atol = DEFAULT_TOLERANCE[dtype]
    rng = random.Random(7)
    for _ in range(5000):
        v = rng.choice([-1, 1]) * 10 ** rng.uniform(-14, 4)
        r = round_value(v, rtol, atol)
        assert abs(r - v) <= STEP_FRACTION * max(atol, rtol * abs(v)) / 2 * (1 + 1e-9) + 1e-300
        digits = len(repr(abs(r)).replace(".", "").lstrip("0").split("e")[0])
        assert digits <= (7 if dtype == "float32" else 13) or math.isclose(r, 0)
    assert round_value(0.5, 0.0, 0.0) == 0.5   # an exact comparison keeps every digit


def test_committed_snapshots_are_rounded():
    """What students get holds no machine-dependent digits (float32 values have at most 7
    significant digits, far fewer than float32's own 9)."""
    data = json.loads((ROOT / "assignments" / "attention" / "snapshots" / "softmax.json")
                      .read_text())
    assert data["lesson_small"]["output"]["data"] == [0.0900306, 0.2447285, 0.6652409]
    assert list(data) == sorted(data)
