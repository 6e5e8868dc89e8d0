"""`autograder snapshot`: the public cases' expected values, recorded from the reference so that
an unchanged assignment changes no file, whatever machine records it.

Four rules make the files the same on any machine and keep a diff to what changed:

* keys are sorted and the layout is fixed (`json.dumps(..., indent=1, sort_keys=True)`);
* expected outputs and gradients (arrays and float numbers) are rounded to a decimal step well
  inside the tolerance the case is checked with (at most STEP_FRACTION, a hundredth, of `max(atol, rtol * |v|)` for the
  question's tolerance of that dtype, `checks.tolerance_for`), with Python's correctly rounded
  `round`. Inputs and upstream gradients are kept exactly: they are made from a seed, and a
  public case checks that its inputs are still the recorded ones;
* a value already on disk (and already rounded) is kept as it is, value by value, when the new
  recording agrees with it to within KEEP_FRACTION, a tenth, of the tolerance (and the entry's
  function, inputs, upstream, shapes and dtypes are the same). Rounding alone cannot make the
  files machine-independent: a value near a rounding boundary flips a digit whatever the step,
  and the reference's float32 gradients through a whole block move by far more than an ulp or
  two between machines (another CPU's BLAS kernels, summation order, thread count). Measured:
  up to 0.024 of the tolerance between two machines (block's and multi_head's float32
  gradients), which the old rule (keep within a hundredth) rewrote; a tenth leaves four times
  that margin, and a stored value is then never further than a tenth of the tolerance from what
  the reference computes here. A value that moves further is rewritten alone, so a diff shows
  the values a change of the reference really moved;
* a file whose text would not change is not written, so a new question touches only its own.

`tests/authoring/test_snapshot_files.py` records again in subprocesses under other CPU settings
(`ATEN_CPU_CAPABILITY`, one thread or several, MKL's and OpenBLAS's instruction sets) and finds
no file changed.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.assignment import Assignment

# The rounding step, and the agreement that keeps a stored value, as fractions of the tolerance.
STEP_FRACTION = 0.01
KEEP_FRACTION = 0.1
ROUNDED_PARTS = ("output", "grads")   # what the reference computes; inputs stay exact


@dataclass
class Recording:
    """What the reference recorded on the public cases: {question: {key: entry}}, the
    question's tolerance table per question, the questions the reference fails, and the
    reference's whole result (every case it ran)."""
    entries: dict[str, dict[str, dict]]
    tolerances: dict[str, dict]
    failing: list[str]
    result: Any = None


def record(assignment: Assignment, include_hidden: bool = False) -> Recording:
    """Run the reference on every public case (and every hidden one with `include_hidden`,
    as lint does), recording what each snapshot holds (nothing is written)."""
    from ..checking.context import Mode, Recording as Store
    from ..grading.runner import grade_functions
    from ..model.status import QuestionStatus

    from .travel import travelling

    ref = assignment.load_reference()
    # Inputs the reference gets here, in this process, must also reach a student's worker.
    env = {name: travelling(getattr(ref, name)) for name in assignment.api if hasattr(ref, name)}
    env.update({name: getattr(ref, name, None) for name in assignment.answers})
    store = Store()
    result = grade_functions(assignment, "reference", lambda q: env,
                             include_hidden=include_hidden, mode=Mode.RECORD, recording=store)
    failing = [q.id for q in result.questions.values() if q.status != QuestionStatus.PASSED]
    return Recording(store.store, store.tolerances, failing, result)


def _tolerance(table: dict, dtype: str) -> tuple[float, float]:
    from ..checking.checks import DEFAULT_TOLERANCE

    rtol, atol = {**DEFAULT_TOLERANCE, **(table or {})}.get(dtype, (0.0, 0.0))
    return float(rtol), float(atol)


def round_value(v: float, rtol: float, atol: float) -> float:
    """`v` rounded to the largest power-of-ten step no more than STEP_FRACTION of
    `max(atol, rtol * |v|)`; unchanged without a tolerance (an exact comparison)."""
    allowed = max(atol, rtol * abs(v)) * STEP_FRACTION
    if allowed <= 0 or not math.isfinite(v) or v == 0:
        return v
    digits = -math.floor(math.log10(allowed))
    out = round(v, digits)
    return 0.0 if out == 0 else out   # no "-0.0" for a value that rounds to nothing


def _is_float_array(node: Any) -> bool:
    return isinstance(node, dict) and node.get("t") in ("tensor", "ndarray") \
        and str(node.get("dtype", "")).startswith("float") and isinstance(node.get("data"), list)


def _is_float_number(node: Any) -> bool:
    """A float scalar (a Python float is a float64; a NumPy scalar says its dtype)."""
    return isinstance(node, dict) and node.get("t") == "scalar" and node.get("kind") == "float" \
        and isinstance(node.get("v"), float)


def _rounded_tree(node: Any, table: dict) -> Any:
    if _is_float_array(node):
        rtol, atol = _tolerance(table, node["dtype"])
        data = [round_value(x, rtol, atol) if isinstance(x, float) else x for x in node["data"]]
        return {**node, "data": data}
    if _is_float_number(node):
        rtol, atol = _tolerance(table, str(node.get("dtype", "float64")))
        return {**node, "v": round_value(node["v"], rtol, atol)}
    if isinstance(node, dict):
        return {k: _rounded_tree(v, table) for k, v in node.items()}
    if isinstance(node, list):
        return [_rounded_tree(v, table) for v in node]
    return node


def rounded_entry(entry: dict, table: dict) -> dict:
    """A recorded entry with its outputs and gradients rounded (see the module's note)."""
    return {k: _rounded_tree(v, table) if k in ROUNDED_PARTS else v for k, v in entry.items()}


class _Differs(Exception):
    """The stored entry is not a recording of the same call (structure, dtypes, inputs)."""


def _settled_tree(old: Any, new: Any, table: dict, exact: bool,
                  tol: tuple[float, float] | None = None) -> Any:
    """`new`, with each float of a computed part replaced by the stored one where that is
    already rounded and agrees within KEEP_FRACTION of its tolerance (the others rounded);
    raises _Differs when the structure, a dtype, a shape or any exact value differs."""
    if isinstance(old, dict) and isinstance(new, dict):
        if old.keys() != new.keys():
            raise _Differs
        if not exact and _is_float_array(new):
            tol = _tolerance(table, new["dtype"])
        elif not exact and _is_float_number(new):
            tol = _tolerance(table, str(new.get("dtype", "float64")))
        return {k: _settled_tree(old[k], new[k], table, exact, tol) for k in new}
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            raise _Differs
        return [_settled_tree(a, b, table, exact, tol) for a, b in zip(old, new)]
    if isinstance(old, float) and isinstance(new, float) and not exact and tol is not None:
        return _settled_value(old, new, *tol)
    if type(old) is not type(new) or old != new:
        raise _Differs
    return new


def _settled_value(old: float, new: float, rtol: float, atol: float) -> float:
    if math.isnan(old) or math.isnan(new):
        return old if math.isnan(old) and math.isnan(new) else round_value(new, rtol, atol)
    if old == new:
        return old
    if math.isfinite(old) and math.isfinite(new) and round_value(old, rtol, atol) == old \
            and abs(old - new) <= max(atol, rtol * abs(old)) * KEEP_FRACTION:
        return old
    return round_value(new, rtol, atol)


def settled_entry(old: dict | None, new: dict, table: dict) -> dict:
    """The entry to write: the fresh recording, rounded, with every value that agrees with the
    stored entry kept as stored (see the module's note); the fresh one, rounded, when the
    stored entry records another call."""
    if isinstance(old, dict) and old.keys() == new.keys():
        try:
            return {k: _settled_tree(old[k], new[k], table, exact=k not in ROUNDED_PARTS)
                    for k in new}
        except _Differs:
            pass
    return rounded_entry(new, table)


def file_text(entries: dict) -> str:
    return json.dumps(entries, indent=1, sort_keys=True) + "\n"


@dataclass
class Written:
    path: Path
    cases: int
    changed: bool


def write_snapshots(assignment: Assignment, recording: Recording) -> list[Written]:
    """Write each question's snapshot file, only where its text changes."""
    assignment.snapshot_dir.mkdir(exist_ok=True)
    written = []
    for qid, entries in sorted(recording.entries.items()):
        path = assignment.snapshot_dir / f"{qid}.json"
        try:
            stored = json.loads(path.read_text())
        except (OSError, ValueError):
            stored = {}
        if not isinstance(stored, dict):
            stored = {}
        table = recording.tolerances.get(qid, {})
        # Entries of cases no longer public are dropped with the rest of the old file.
        settled = {key: settled_entry(stored.get(key), entry, table)
                   for key, entry in entries.items()}
        text = file_text(settled)
        try:
            before = path.read_text()
        except OSError:
            before = None
        if text != before:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text)
            tmp.replace(path)
        written.append(Written(path, len(entries), text != before))
    return written
