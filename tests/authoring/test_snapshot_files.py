"""`autograder snapshot` writes the same files on any machine: an unchanged assignment changes
no file (also recorded under other CPU settings, and with the reference's last digits moved as
far as another machine moves them), a new question touches only its own, a value that really
moved is rewritten alone, and the rounded values still pass the checks."""
import copy
import json
import math
import os
import random
import subprocess
import sys

import pytest

from helpers import ROOT, assignment_names, cli_in_process, copy_assignment

from autograder.model.assignment import load_assignment
from autograder.authoring.snapshots import (KEEP_FRACTION, ROUNDED_PARTS, STEP_FRACTION,
                                            _tolerance, record, round_value, settled_entry,
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


def _moved_tree(tree, table, move, tol=None):
    """Every computed float moved by `move(value, tolerance)` (the tolerance it is checked
    with, `max(atol, rtol * |v|)`)."""
    if isinstance(tree, dict):
        if str(tree.get("dtype", "")).startswith("float") and isinstance(tree.get("data"), list):
            rtol, atol = _tolerance(table, tree["dtype"])
            return {**tree, "data": [x + move(x, max(atol, rtol * abs(x)))
                                     if isinstance(x, float) else x for x in tree["data"]]}
        return {k: _moved_tree(v, table, move) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_moved_tree(v, table, move) for v in tree]
    return tree


def _moved(recording, move):
    moved = copy.deepcopy(recording)
    for qid, entries in moved.entries.items():
        table = moved.tolerances.get(qid, {})
        for entry in entries.values():
            for part in ROUNDED_PARTS:
                if part in entry:
                    entry[part] = _moved_tree(entry[part], table, move)
    return moved


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    adir = copy_assignment(tmp_path_factory.mktemp("recorded") / "attention")
    return adir, record(load_assignment(adir))


def _fresh_copy(tmp_path, recorded):
    import shutil

    adir = tmp_path / "attention"
    shutil.copytree(recorded[0], adir)
    return adir, load_assignment(adir)


def test_another_machines_last_digits_change_no_file(tmp_path, recorded):
    """Between two machines the reference's float32 gradients through a block moved by up to
    0.024 of their tolerance (the committed block.json against this project's CI machine),
    far more than an ulp or two: a recording whose every computed value moves by up to 0.05 of
    its tolerance, either way, leaves every file as it is (the rule before, keeping a value
    only within a hundredth, rewrote two files)."""
    adir, assignment = _fresh_copy(tmp_path, recorded)
    before = _files(adir / "snapshots")
    rng = random.Random(44)
    moved = _moved(recorded[1], lambda v, tol: rng.uniform(-0.05, 0.05) * tol)
    written = write_snapshots(assignment, moved)
    assert not any(w.changed for w in written)
    assert _files(adir / "snapshots") == before


def test_a_value_that_really_moved_is_rewritten_alone(tmp_path, recorded):
    """A reference that really changed rewrites what it changed: every value when all move by
    ten tolerances, and one line of one file when one value moves by a fifth of its own."""
    adir, assignment = _fresh_copy(tmp_path, recorded)
    before = {name: data.decode() for name, (data, _) in _files(adir / "snapshots").items()}
    written = write_snapshots(assignment, _moved(recorded[1], lambda v, tol: 10 * tol))
    assert all(w.changed for w in written)

    adir, assignment = _fresh_copy(tmp_path / "one", recorded)
    one = copy.deepcopy(recorded[1])
    grads = one.entries["block"]["block_causal"]["grads"]["0/0"]["data"]
    rtol, atol = _tolerance(one.tolerances.get("block", {}), "float32")
    grads[5] += 0.2 * max(atol, rtol * abs(grads[5]))
    written = write_snapshots(assignment, one)
    assert [w.path.name for w in written if w.changed] == ["block.json"]
    after = (adir / "snapshots" / "block.json").read_text().splitlines()
    old = before["block.json"].splitlines()
    assert len(after) == len(old)
    changed = [(a, b) for a, b in zip(old, after) if a != b]
    assert len(changed) == 1, changed
    assert float(changed[0][1].strip().rstrip(",")) == round_value(grads[5], rtol, atol)


@pytest.mark.parametrize("stored", [0.1234565, -2.640700, 0.0697279, 5e-06])
def test_a_value_on_a_rounding_boundary_keeps_its_digits(stored):
    """A stored float32 value is kept whether the new recording sits just below or just above
    a rounding boundary (where rounding alone would flip the last digit)."""
    rtol, atol = DEFAULT_TOLERANCE["float32"]
    assert round_value(stored, rtol, atol) == stored
    step = 10 ** math.floor(math.log10(STEP_FRACTION * max(atol, rtol * abs(stored))))
    entry = lambda v: {"function": "f", "output": {"t": "tensor", "dtype": "float32",
                                                   "shape": [1], "data": [v]}}
    for new in (stored + step / 2 - 1e-12, stored + step / 2 + 1e-12, stored - step / 2,
                stored + KEEP_FRACTION * 0.9 * max(atol, rtol * abs(stored))):
        assert settled_entry(entry(stored), entry(new), {}) == entry(stored), new
    far = stored + KEEP_FRACTION * 1.5 * max(atol, rtol * abs(stored))
    assert settled_entry(entry(stored), entry(far), {})["output"]["data"] == \
        [round_value(far, rtol, atol)]
    # Another call (its inputs or its shape differ): the whole entry is the new one.
    other = {**entry(stored), "inputs": [1.0]}
    assert settled_entry(entry(stored), other, {}) == other


# Settings that change which kernels and how many threads compute the reference: ATen's
# vectorised kernels (ATEN_CPU_CAPABILITY), torch's and the BLAS libraries' thread counts, and
# the instruction sets MKL (torch) and OpenBLAS (NumPy) may use.
CPU_SETTINGS = {
    "one thread, no vector instructions": {
        "ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "MKL_CBWR": "COMPATIBLE", "OPENBLAS_CORETYPE": "Prescott"},
    "four threads, AVX2": {
        "ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4",
        "OPENBLAS_NUM_THREADS": "4", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell"},
}


@pytest.mark.parametrize("setting", list(CPU_SETTINGS))
def test_other_cpu_settings_record_the_same_files(tmp_path, setting):
    """`autograder snapshot` of both tracks in a process whose reference runs on other kernels
    and thread counts writes no file."""
    folders = [copy_assignment(tmp_path / name, name) for name in ("attention", "attention_numpy")]
    before = {f.name: _files(f / "snapshots") for f in folders}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATEN_", "MKL_", "OMP_",
                                                                       "OPENBLAS_"))}
    code = ("import sys; from autograder.cli import main; "
            "sys.exit(max(main(['snapshot', '-a', a]) for a in sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, *map(str, folders)], cwd=ROOT,
                       env={**env, **CPU_SETTINGS[setting]}, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wrote" not in r.stdout, r.stdout
    assert {f.name: _files(f / "snapshots") for f in folders} == before


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
