"""Running one question file's cases against a submission's functions (`run_question`): the
core of every run, the grader's (`runner`, in the trusted process with stand-ins that forward
to the sandboxed worker), a student's own check, and the notebook's `grader.check` when it names
a likely mistake (`platforms/notebook/hints.py`). Question files are otter exception-based test
files, loaded with otter's own parser.

It imports nothing that imports the question files' API (`autograder.checking.question`), so
that API may call back into it.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import Any

from ..checking.checks import CallStopped, CheckFailed
from ..checking.context import CheckContext, bind
from ..checking.expected import GraderError
from ..model.assignment import Assignment
from ..model.results import CaseResult, QuestionResult
from ..model.status import CaseStatus
from ..pictures.weights import picture_of
from ..sandbox.errors import RunStopped


class QuestionStopped(CallStopped):
    """The worker was stopped during a question (time or memory limit, a refused forbidden
    routine, or it died)."""

    def __init__(self, status: str, message: str, routines: list[str] | None = None):
        super().__init__(message, routines)
        self.status = CaseStatus(status)
        self.message = message


def import_otter_test_files():
    """Import otter's exception-based test files without the rest of otter.

    `import otter` loads otter's whole API (notebook export, plugins: over a second), and even
    its `otter.test_files` package imports nbformat, IPython and jsonschema (about half a second
    more), which every grading process and a student's `autograder check` would pay. Only
    `otter.test_files.exception_test` is needed, and it needs nothing but the standard library:
    it is imported under bare package objects standing in for `otter` and `otter.test_files`
    (`_light_otter`), which are removed again. A later `import otter` (a notebook, `otter
    generate`) loads the real packages, which reuse the same module and classes. Where the real
    `otter.test_files` is loaded already, it is used as it is.
    """
    import importlib

    with _light_otter():
        return importlib.import_module("otter.test_files.exception_test").ExceptionTestFile


@contextlib.contextmanager
def _light_otter():
    """Within it, `otter` and `otter.test_files` resolve to bare packages (unless the real ones
    are loaded) whose `test_case` is otter's own: what a question file's `from
    otter.test_files import test_case` and the import of `exception_test` need."""
    import importlib
    import importlib.util
    import types

    if "otter.test_files" in sys.modules:
        yield
        return
    stubs = {}
    if "otter" not in sys.modules:
        spec = importlib.util.find_spec("otter")
        otter = types.ModuleType("otter")
        otter.__path__ = list(spec.submodule_search_locations)
        otter.__spec__, otter.__file__ = spec, spec.origin
        stubs["otter"] = otter
    parent = stubs.get("otter") or sys.modules["otter"]
    package = types.ModuleType("otter.test_files")
    package.__path__ = [os.path.join(p, "test_files") for p in parent.__path__]
    package.__package__ = "otter.test_files"
    stubs["otter.test_files"] = package
    sys.modules.update(stubs)
    try:
        module = importlib.import_module("otter.test_files.exception_test")
        package.test_case = module.test_case
        package.ExceptionTestFile = module.ExceptionTestFile
        yield
    finally:
        for name, stub in stubs.items():
            if sys.modules.get(name) is stub:
                del sys.modules[name]


@functools.lru_cache(maxsize=None)
def load_question_file(path: str):
    """An otter `ExceptionTestFile`, parsed by otter itself (the file's own `from
    otter.test_files import test_case` under `_light_otter`)."""
    test_file = import_otter_test_files()
    with _light_otter():
        return test_file.from_file(path)


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
                 include_hidden: bool, context: CheckContext) -> QuestionResult:
    """Run one question file's cases on the student's names in `env`, each check in
    `context` (handed to the cases with the names: `checking.context.bind`)."""
    test_file = load_question_file(str(assignment.question(qid).test_file))
    bound = bind(env, context)
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
            tc.body.call_func(bound)
        except CheckFailed as e:
            result.fail_with(e.problems[0], CaseStatus(e.status))
            for name in e.called:
                if name not in called:
                    called.append(name)
            if tc.hidden:   # the similarity report's second signal (never shown)
                result.output_digest = e.output_digest
            if e.record is not None:
                context.note(e.record, passed=False, case=result)
                # Where the error was raised, for the dependency notes.
                err = e.record.got.get("error") or {}
                result.error_function = str(err.get("function") or "")
                result.refused = _refused(e.record)
                if not tc.hidden:   # never a hidden case's expected values
                    result.picture = _picture(e.record)
        except QuestionStopped as e:
            result.status, result.kind, result.message = e.status, e.status, e.message
            if e.record is not None:    # a refused routine: the library shortcut is named
                context.note(e.record, passed=False, case=result)
                result.refused = _refused(e.record)
            if e.status in (CaseStatus.TIMEOUT, CaseStatus.MEMORY):
                stopped = e   # the rest of this question would hit the same wall
        except GraderError as e:
            # The grader's own failure: kept apart from the student's errors, message kept.
            result.status, result.kind = CaseStatus.INTERNAL_ERROR, "grader"
            result.message = f"the grader could not run this case ({e}); tell your instructor"
        except RunStopped:
            raise
        except AssertionError as e:
            # A plain `assert` of the question file's own (otter's way of failing a case).
            result.status, result.kind = CaseStatus.FAILED, "failed"
            result.message = str(e)[:400] or "a check of this case failed"
        except Exception as e:  # noqa: BLE001 - the question file's own code failed on a value
            # A case's own code (not a check) that trips over what the student returned, or a
            # bug of the question file: this case cannot be judged, the others can.
            result.status, result.kind = CaseStatus.INTERNAL_ERROR, "grader"
            result.message = (f"the grader could not run this case ({type(e).__name__}: "
                              f"{str(e)[:200]}); tell your instructor")
        cases.append(result)
    return QuestionResult(qid, cases, called=called)
