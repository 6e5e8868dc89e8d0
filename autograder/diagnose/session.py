"""One submission's diagnosis, for the grader: `Question.check` reports every check to the
`Session` of its check context (`Session.note`); once the submission's last call is made,
`Session.apply` names the mistake of each failing case whose evidence is unambiguous."""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..checking.record import CheckRecord as CheckedCall
from ..model.assignment import Assignment, AssignmentError
from ..sandbox.execute import iter_arrays
from .catalogue import catalogue_for
from .fallback import decide
from .sources import OutcomeUnknown, ReferenceVariants, ShippedVariants
from .stand_ins import name_past_helpers
from .constructs import code_for
from .symptoms import output_matches_reference
from .table import load_table
from .variants import CheckRecord, VariantRunner, find_matches

_warned: set[str] = set()


class Session:
    """Collects one submission's checks while it is graded; `apply` names the mistakes."""

    def __init__(self, assignment: Assignment):
        self.assignment = assignment
        # Public cases only (a student's check): variants' outcomes come from the table the
        # student bundle ships, as they do in the bundle, rather than from the reference.
        self.public_only = False
        self.passed: dict[str, list[CheckRecord]] = {}
        self.failed: list[tuple[CheckRecord, Any]] = []
        self.kept_bytes = 0     # of the student's outcomes held in the records above
        # Runs the student's function again with correct helpers standing in for theirs
        # (`stand_ins.Runs`), where the grader can: a case that fails inside a failing helper
        # is then judged on its own too. None: no such re-runs.
        self.stand_ins = None
        self.reruns = 0         # cases run again that way (for the cost figures)
        self.failed_by_function: dict[str, list[CheckRecord]] = {}
        # The student's source, read (never run) for the constructs some mistakes are made
        # with (`constructs`); None: not known, no construct required.
        self.source: str | None = None

    def note(self, record: Any, passed: bool, case: Any = None) -> None:
        """Keep one check (`Question.check` reports each, a `checking.record.CheckRecord`),
        within the memory bounds below."""
        if isinstance(record, CheckedCall):
            record = CheckRecord.of(record)
        size = outcome_bytes(record.got)
        if size > max(RECORD_FACTOR * outcome_bytes(record.expected), RECORD_FLOOR) \
                or self.kept_bytes + size > KEPT_BYTES:
            return
        self.kept_bytes += size
        if passed:
            self.passed.setdefault(record.function, []).append(record)
        elif case is not None:
            self.failed.append((record, case))

    def apply(self, questions: dict | None = None) -> None:
        """Set `diagnosis` and `hint` on each failing case whose mistake is unambiguous; with
        the submission's `questions` (QuestionResults by id), also add to each question whose
        cases name several causes a note listing them in the order to fix them."""
        if not self.failed:
            return
        try:
            runner = runner_for(self.assignment, self.public_only)
            if runner is None:
                return
            catalogue = runner.catalogue
        except (AssignmentError, OSError, SyntaxError, ValueError) as e:
            message = str(e)
            if "not available" not in message and message not in _warned:
                _warned.add(message)
                print(f"autograder: diagnosis disabled: {message}", file=sys.stderr)
            return
        # Helpers first (functions that call fewer of the others), so that a function's search
        # for several causes knows what its helpers' cases were named.
        failed = sorted(self.failed, key=lambda rc: len(runner.calls.get(rc[0].function, ())))
        named: dict[str, set[str]] = {}
        self.failed_by_function = {}
        for record, _ in failed:
            self.failed_by_function.setdefault(record.function, []).append(record)
        for record, case in failed:
            others = self._records(record.function)
            where = (record.got.get("error") or {}).get("function")
            helper = self._records(where) if where and where != record.function else []
            try:
                found = find_matches(runner, record, self.passed, self.failed_by_function,
                                     self.code(record.function))
                found_here = decide(runner, record, found, self.passed, others, helper, named)
            except OutcomeUnknown:
                continue    # the shipped table cannot settle this case: no name, not a guess
            except Exception as e:  # noqa: BLE001 - never let diagnosis change a grade
                key = f"{type(e).__name__}: {e}"
                if key not in _warned:
                    _warned.add(key)
                    print(f"autograder: diagnosis of {record.function} failed: {key}",
                          file=sys.stderr)
                continue
            if found_here is not None:
                case.diagnosis = found_here.ids
                case.hint = found_here.text
                named.setdefault(record.function, set()).update(found_here.ids)
        try:
            right_by_chance(runner, self.failed)
        except OutcomeUnknown:
            pass
        if questions and self.stand_ins is not None:
            try:
                self.reruns += name_past_helpers(runner, self, questions, named)
            except OutcomeUnknown:
                pass
            except Exception as e:  # noqa: BLE001 - never let diagnosis change a grade
                key = f"{type(e).__name__}: {e}"
                if key not in _warned:
                    _warned.add(key)
                    print(f"autograder: grading past a failing helper failed: {key}",
                          file=sys.stderr)
        if questions:
            try:
                add_order_notes(catalogue, questions)
            except Exception as e:  # noqa: BLE001 - a note never costs a submission its row
                key = f"{type(e).__name__}: {e}"
                if key not in _warned:
                    _warned.add(key)
                    print(f"autograder: ordering the named causes failed: {key}",
                          file=sys.stderr)

    def code(self, function: str):
        """What gives the student's code a call of `function` runs (read only when a mistake
        tied to a construct fits), or None when the source is not known."""
        if self.source is None:
            return None
        return lambda: code_for(self.source, function)

    def _records(self, function: str) -> list[CheckRecord]:
        """Every check of `function` in this submission, passed and failed."""
        return list(self.passed.get(function, [])) + \
            [r for r, _ in self.failed if r.function == function]


# Worded for every mistake: which inputs hide one differs (scores that saturate, a row whose
# variance eps outweighs), and a named example would be wrong for the others.
BY_CHANCE = ("as your other cases show: the output is right here only because these inputs hide "
             "the mistake, and the gradient still shows it")


def _output_right(record: CheckRecord) -> bool:
    return record.got.get("status") == "ok" and output_matches_reference(record.evidence())


def right_by_chance(runner: VariantRunner, failed: list) -> None:
    """A case whose output is right and whose gradient is not, where the function's other
    failing cases name one mistake: say that the output is right only by chance and name that
    mistake (when its variant explains this case too), so that the student does not hunt a
    gradient bug that is not there."""
    by_function: dict[str, list] = {}
    for record, case in failed:
        by_function.setdefault(record.function, []).append((record, case))
    for function, items in by_function.items():
        elsewhere = {tuple(c.diagnosis) for r, c in items if c.diagnosis and not _output_right(r)}
        if len(elsewhere) != 1 or len(next(iter(elsewhere))) != 1:
            continue
        mid = next(iter(elsewhere))[0]
        m = runner.catalogue.mistakes.get(mid)
        if m is None:
            continue
        for record, case in items:
            if not _output_right(record) or (case.diagnosis and list(case.diagnosis) != [mid]):
                continue
            if not case.diagnosis and not (m.alternatives and any(
                    runner.affects(alt, function) and runner.explains(m, i, record)
                    for i, alt in enumerate(m.alternatives))):
                continue
            case.diagnosis = [mid]
            case.hint = f"likely mistake: {m.name}, {BY_CHANCE}. {m.hint}"


def runner_for(assignment: Assignment, public_only: bool) -> VariantRunner | None:
    """The variant engine for a submission: on the public cases alone (a student's check), with
    the outcomes the shipped table holds, so that the project's check and the bundle's name the
    same mistakes; otherwise by running the reference's variants, where the reference and the
    catalogue are, and from the table where they are not (a public bundle's grading). None
    when neither is there (no diagnosis)."""
    if not public_only and assignment.reference_path is not None:
        # Where the reference and the catalogue are, the table is not read at all (decoding
        # it cost each grading process a few tenths of a second for nothing).
        catalogue = catalogue_for(assignment)
        if catalogue is not None:
            return VariantRunner(catalogue, ReferenceVariants(assignment, catalogue))
    table = load_table(assignment)
    catalogue = None if public_only and table is not None else catalogue_for(assignment)
    if catalogue is not None and assignment.reference_path is not None:
        return VariantRunner(catalogue, ReferenceVariants(assignment, catalogue))
    if table is not None:
        return VariantRunner(table.catalogue, ShippedVariants(table))
    return None


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


def add_order_notes(catalogue, questions: dict) -> None:
    """A note on each question whose failing cases name two or more causes: all of them, in
    the order to fix them. First the mistakes that make the code raise (until it runs, the other
    cases say little), then the others in the catalogue's order (the order of the computation);
    a mistake named in an earlier question (a helper's) comes before both, as fixing it there
    changes what this question's cases show."""
    order = {mid: n for n, mid in enumerate(catalogue.mistakes)}
    first_question: dict[str, int] = {}
    for n, q in enumerate(questions.values()):
        for c in q.cases:
            for mid in c.diagnosis or []:
                first_question.setdefault(mid, n)
    for n, q in enumerate(questions.values()):
        counts: dict[str, int] = {}
        sets = set()
        for c in q.cases:
            if c.diagnosis:
                sets.add(tuple(c.diagnosis))
            for mid in c.diagnosis or []:
                counts[mid] = counts.get(mid, 0) + 1
        if len(counts) < 2 or len(sets) < 2:
            continue    # one cause, or every case names the same ones (its hint lists them)

        def rank(mid: str) -> tuple:
            m = catalogue.mistakes.get(mid)
            earlier = first_question.get(mid, n) < n
            return (not earlier, not (m is not None and m.crashes), order.get(mid, 0))

        listed = []
        for k, mid in enumerate(sorted(counts, key=rank), 1):
            m = catalogue.mistakes.get(mid)
            name = m.name if m is not None else mid
            listed.append(f"{k}. {name} ({counts[mid]} case{'s' if counts[mid] != 1 else ''})")
        q.notes.append("note: the failing cases here show " + str(len(counts)) +
                       " causes; fix them in this order: " + "; ".join(listed))
