"""One submission's diagnosis, for the grader: `Question.check` reports every check
(`note_check`) while a `Session` collects them; once the submission's last call is made,
`Session.apply` names the mistake of each failing case whose evidence is unambiguous."""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from ..assignment import Assignment, AssignmentError
from ..sandbox.execute import iter_arrays
from .catalogue import catalogue_for
from .fallback import decide
from .variants import CheckRecord, _Runner, find_matches

_state = threading.local()
_warned: set[str] = set()


class Session:
    """Collects one submission's checks while it is graded; `apply` names the mistakes."""

    def __init__(self, assignment: Assignment):
        self.assignment = assignment
        self.passed: dict[str, list[CheckRecord]] = {}
        self.failed: list[tuple[CheckRecord, Any]] = []
        self.kept_bytes = 0     # of the student's outcomes held in the records above

    def __enter__(self) -> "Session":
        self._previous = getattr(_state, "session", None)
        _state.session = self
        return self

    def __exit__(self, *exc) -> None:
        _state.session = self._previous

    def apply(self) -> None:
        """Set `diagnosis` and `hint` on each failing case whose mistake is unambiguous."""
        if not self.failed:
            return
        try:
            catalogue = catalogue_for(self.assignment)
            if catalogue is None:
                return
            runner = _Runner(self.assignment, catalogue)
        except (AssignmentError, OSError, SyntaxError) as e:
            message = str(e)
            if "not available" not in message and message not in _warned:
                _warned.add(message)
                print(f"autograder: diagnosis disabled: {message}", file=sys.stderr)
            return
        for record, case in self.failed:
            others = self._records(record.function)
            where = (record.got.get("error") or {}).get("function")
            helper = self._records(where) if where and where != record.function else []
            try:
                found = find_matches(runner, record, self.passed)
                named = decide(runner, record, found, self.passed, others, helper)
            except Exception as e:  # noqa: BLE001 - never let diagnosis change a grade
                key = f"{type(e).__name__}: {e}"
                if key not in _warned:
                    _warned.add(key)
                    print(f"autograder: diagnosis of {record.function} failed: {key}",
                          file=sys.stderr)
                continue
            if named is not None:
                case.diagnosis = named.ids
                case.hint = named.text

    def _records(self, function: str) -> list[CheckRecord]:
        """Every check of `function` in this submission, passed and failed."""
        return list(self.passed.get(function, [])) + \
            [r for r, _ in self.failed if r.function == function]


# What one submission's records may hold of the student's outcomes, whatever they return: a
# record is kept if its outcome is at most RECORD_FACTOR times the reference's (or
# RECORD_FLOOR), while the submission's total stays within KEPT_BYTES. Honest outcomes are tens
# of kilobytes; a case whose record is not kept simply gets no named mistake.
RECORD_FACTOR = 4
RECORD_FLOOR = 2**20
KEPT_BYTES = 64 * 2**20


def outcome_bytes(outcome: dict) -> int:
    """Bytes of the arrays in an outcome's output and gradients."""
    return sum(a.nbytes if isinstance(a, np.ndarray) else a.numel() * a.element_size()
               for _, a in iter_arrays((outcome.get("output"), outcome.get("grads"))))


def note_check(record: CheckRecord, passed: bool, case: Any = None) -> None:
    """Called for every `Question.check`; kept only while a Session is collecting, and only
    within the memory bounds above."""
    session = getattr(_state, "session", None)
    if session is None:
        return
    size = outcome_bytes(record.got)
    if size > max(RECORD_FACTOR * outcome_bytes(record.expected), RECORD_FLOOR) \
            or session.kept_bytes + size > KEPT_BYTES:
        return
    session.kept_bytes += size
    if passed:
        session.passed.setdefault(record.function, []).append(record)
    elif case is not None:
        session.failed.append((record, case))
