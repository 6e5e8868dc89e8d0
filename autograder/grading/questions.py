"""Running one question file's cases against a submission's functions (`run_question`): the
core of every run, the grader's (`runner`, in the trusted process with stand-ins that forward
to the sandboxed worker), a student's own check, and the notebook's `grader.check` when it names
a likely mistake (`platforms/notebook/hints.py`). Question files are otter exception-based test
files, loaded with otter's own parser.

It imports nothing that imports the question files' API (`autograder.checking.question`), so that API may
call back into it.
"""
from __future__ import annotations

import functools
from typing import Any

from .. import diagnose
from ..model.assignment import Assignment
from ..checking.checks import CallStopped, CheckFailed
from ..checking.expected import GraderError
from ..pictures.weights import picture_of
from ..model.results import CaseResult, QuestionResult
from ..model.status import CaseStatus


class QuestionStopped(CallStopped):
    """The worker was stopped during a question (time or memory limit, a refused forbidden
    routine, or it died)."""

    def __init__(self, status: str, message: str, routines: list[str] | None = None):
        super().__init__(message)
        self.status = CaseStatus(status)
        self.message = message
        self.routines = list(routines or [])


def _import_otter_test_files():
    """Import otter's test-file module without the rest of otter.

    `import otter` loads otter's whole API (notebook export, plugins: over a second), which a
    student's `autograder check` would pay every time. Only `otter.test_files` is needed, so when
    otter is not loaded yet, a bare package object stands in for `otter` while that subpackage
    is imported, and is removed again: a later `import otter` (e.g. in a notebook) loads the real
    package, which reuses the same `otter.test_files` module and classes.
    """
    import importlib
    import importlib.util
    import sys
    import types

    if "otter" not in sys.modules:
        spec = importlib.util.find_spec("otter")
        stub = types.ModuleType("otter")
        stub.__path__ = list(spec.submodule_search_locations)
        stub.__spec__, stub.__file__ = spec, spec.origin
        sys.modules["otter"] = stub
        try:
            importlib.import_module("otter.test_files")
        finally:
            if sys.modules.get("otter") is stub:
                del sys.modules["otter"]
    return importlib.import_module("otter.test_files.exception_test").ExceptionTestFile


@functools.lru_cache(maxsize=None)
def load_question_file(path: str):
    """An otter `ExceptionTestFile`, parsed by otter itself."""
    return _import_otter_test_files().from_file(path)


def _refused(record) -> list[str]:
    """The forbidden routines a check's call reached, as the assignment names them (for the
    note that one call costs every question that reaches it; not serialised)."""
    return [n for n in record.got.get("forbidden") or [] if not n.startswith("autograd.")]


def _picture(record) -> dict | None:
    try:
        return picture_of(record)
    except Exception:  # noqa: BLE001 - a picture never costs a case its result
        return None


def run_question(assignment: Assignment, qid: str, env: dict[str, Any], *,
                 include_hidden: bool) -> QuestionResult:
    test_file = load_question_file(str(assignment.question(qid).test_file))
    cases: list[CaseResult] = []
    called: list[str] = []
    stopped: QuestionStopped | None = None
    for tc in test_file.test_cases:
        if tc.hidden and not include_hidden:
            continue
        doc = (tc.body.test_func.__doc__ or "").strip()
        result = CaseResult(tc.name, float(tc.points or 0), bool(tc.hidden), CaseStatus.PASSED,
                            description=doc)
        if stopped is not None:
            result.status, result.kind = stopped.status, stopped.status
            result.message = "not run: " + stopped.message
            cases.append(result)
            continue
        try:
            tc.body.call_func(env)
        except CheckFailed as e:
            problem = e.problems[0]
            result.status, result.kind = CaseStatus(e.status), problem.kind
            result.message = problem.text(tc.hidden)
            for name in getattr(e, "called", []):
                if name not in called:
                    called.append(name)
            if tc.hidden:   # the similarity report's second signal (never shown)
                result.output_digest = getattr(e, "output_digest", "")
            if getattr(e, "record", None) is not None:
                diagnose.note_check(e.record, passed=False, case=result)
                # Where the error was raised, for the dependency notes (not serialised).
                err = e.record.got.get("error") or {}
                result.error_function = str(err.get("function") or "")
                result.refused = _refused(e.record)
                if not tc.hidden:   # never a hidden case's expected values
                    result.picture = _picture(e.record)
        except QuestionStopped as e:
            result.status, result.kind, result.message = e.status, e.status, e.message
            if e.record is not None:    # a refused routine: the library shortcut is named
                diagnose.note_check(e.record, passed=False, case=result)
                result.refused = _refused(e.record)
            if e.status in (CaseStatus.TIMEOUT, CaseStatus.MEMORY):
                stopped = e   # the rest of this question would hit the same wall
        except GraderError as e:
            # The grader's own failure: kept apart from the student's errors, message kept.
            result.status, result.kind = CaseStatus.INTERNAL_ERROR, "grader"
            result.message = f"the grader could not run this case ({e}); tell your instructor"
        cases.append(result)
    return QuestionResult(qid, cases, called=called)
