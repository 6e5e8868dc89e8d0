"""`autograder snapshot`: the public cases' expected values, recorded from the reference so that
an unchanged assignment changes no file.

Three rules make the files the same on any machine and keep a diff to what changed:

* keys are sorted and the layout is fixed (`json.dumps(..., indent=1, sort_keys=True)`);
* expected outputs and gradients are rounded to a decimal step well inside the tolerance the
  case is checked with (at most a hundredth of `max(atol, rtol * |v|)` for the question's
  tolerance of that dtype, `checks.tolerance_for`), with Python's correctly rounded `round`:
  float32 sums taken in another order on another machine move a value by an ulp or two, far
  less than that step. Inputs and upstream gradients are kept exactly: they are made from a
  seed, and a public case checks that its inputs are still the recorded ones;
* an entry already on disk (and already rounded) is kept as it is when the new recording
  agrees with it to within a hundredth of the tolerance everywhere (the same function, inputs, upstream, shapes and
  dtypes): a value that sits on a rounding boundary cannot flip a digit between machines. A
  file whose text would not change is not written, so a new question touches only its own.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.assignment import Assignment

# The rounding step, and the agreement that keeps an entry, as a fraction of the tolerance.
STEP_FRACTION = 0.01
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
    from ..checking.expected import recording
    from ..grading.runner import grade_functions
    from ..model.status import QuestionStatus

    from .travel import travelling

    ref = assignment.load_reference()
    # Inputs the reference gets here, in this process, must also reach a student's worker.
    env = {name: travelling(getattr(ref, name)) for name in assignment.api if hasattr(ref, name)}
    env.update({name: getattr(ref, name, None) for name in assignment.answers})
    store: dict = {}
    tolerances: dict = {}
    with recording(store, tolerances):
        result = grade_functions(assignment, "reference", lambda q: env,
                                 include_hidden=include_hidden)
    failing = [q.id for q in result.questions.values() if q.status != QuestionStatus.PASSED]
    return Recording(store, tolerances, failing, result)


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


def _rounded_tree(node: Any, table: dict) -> Any:
    if _is_float_array(node):
        rtol, atol = _tolerance(table, node["dtype"])
        data = [round_value(x, rtol, atol) if isinstance(x, float) else x for x in node["data"]]
        return {**node, "data": data}
    if isinstance(node, dict):
        return {k: _rounded_tree(v, table) for k, v in node.items()}
    if isinstance(node, list):
        return [_rounded_tree(v, table) for v in node]
    return node


def rounded_entry(entry: dict, table: dict) -> dict:
    """A recorded entry with its outputs and gradients rounded (see the module's note)."""
    return {k: _rounded_tree(v, table) if k in ROUNDED_PARTS else v for k, v in entry.items()}


def _agrees(old: Any, new: Any, table: dict, exact: bool, tol: tuple[float, float] | None = None
            ) -> bool:
    """Whether a stored tree and a fresh one are the same recording: structure, dtypes, shapes
    and every non-float exactly; floats of the computed parts within STEP_FRACTION of their
    tolerance, those of the inputs exactly."""
    if isinstance(old, dict) and isinstance(new, dict):
        if old.keys() != new.keys():
            return False
        if not exact and _is_float_array(new):
            tol = _tolerance(table, new["dtype"])
        return all(_agrees(old[k], new[k], table, exact, tol) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_agrees(a, b, table, exact, tol)
                                            for a, b in zip(old, new))
    if isinstance(old, float) and isinstance(new, float) and not exact and tol is not None:
        rtol, atol = tol
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        return abs(old - new) <= max(atol, rtol * abs(old)) * STEP_FRACTION
    return type(old) is type(new) and old == new


def settled_entry(old: dict | None, new: dict, table: dict) -> dict:
    """The entry to write: the stored one when it is already rounded and the fresh recording
    agrees with it (see the module's note), else the fresh one, rounded."""
    if isinstance(old, dict) and old.keys() == new.keys() and all(
            _agrees(old[k], new[k], table, exact=k not in ROUNDED_PARTS) for k in new) \
            and rounded_entry(old, table) == old:
        return old
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
