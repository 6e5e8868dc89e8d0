"""Named mistakes where otter runs the question files: the notebook's `grader.check` cells, and
otter's own grading.

Otter runs a question's cases in the student's kernel, one question at a time, outside the
grader's runner: its checks run in the NOTEBOOK context (`checking.context`), with no
diagnosis session to name mistakes afterwards. When a check fails there, the context asks
`NOTEBOOK_NAMER.hint`: it runs the public cases once on the student's current functions (those
of the namespace the failing function was defined in) as `autograder check` does (the same
`run_question` in the CHECK context, the same shipped table of mistakes' outcomes) and returns
that check's "likely mistake" line, which otter then shows with the message, and shows its
heatmaps (`autograder.pictures`) under the cell. So a notebook names what `check` names, in
the same words. The run is kept for as long as the student's functions are the same objects;
what their code prints meanwhile is not shown.

Otter prints a failing case as "Error at line N in test Q:", the line of the question file that
raised, then `CheckFailed: <message>`: the question file's own code above the one line a student
needs. `plain_messages` has otter print a failed check's message alone (other exceptions keep
otter's form).
"""
from __future__ import annotations

import contextlib
import io
from typing import Any

from ...checking.context import CheckContext, Mode
from ...diagnose import Session
from ...grading.questions import run_question


def _hints(assignment: Any, env: dict) -> dict:
    """{(function, call digest): hint} for every failing public check, named as `check` names
    it."""
    session = Session(assignment)
    session.public_only = True
    context = CheckContext(Mode.CHECK, session=session)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        results = {q.id: run_question(assignment, q.id, env, include_hidden=False,
                                      context=context)
                   for q in assignment.questions}
        session.apply(results)
    return {(r.function, r.key): (c.hint, c.picture) for r, c in session.failed
            if c.hint or c.picture}


def _show(picture: dict) -> None:
    """The heatmaps under the cell, when this runs in a notebook's kernel."""
    try:
        from IPython import get_ipython
        from IPython.display import SVG, display

        if get_ipython() is not None:
            from ...pictures.draw import heatmap

            display(SVG(heatmap(picture)))
    except Exception:  # noqa: BLE001 - a picture never costs the student their check
        pass


class NotebookNamer:
    """Names the likely mistake of a failing check in the NOTEBOOK context, keeping its latest
    run: (the student's functions and answers, {(function, call digest): (hint, picture)})."""

    def __init__(self) -> None:
        self._last: tuple[list, dict] | None = None

    def hint(self, record: Any, student: Any) -> str | None:
        """The "likely mistake" line `autograder check` gives this failing public check, or
        None; in a notebook, its heatmaps are shown under the cell (`autograder.pictures`)."""
        namespace = getattr(student, "__globals__", None)
        if not isinstance(namespace, dict):
            return None
        assignment = record.assignment
        env = {name: namespace.get(name)
               for name in list(assignment.api) + list(assignment.answers)}
        current = list(env.values())
        last = self._last
        if last is None or len(last[0]) != len(current) or \
                any(a is not b for a, b in zip(last[0], current)):
            try:
                last = self._last = (current, _hints(assignment, env))
            except Exception:  # noqa: BLE001 - a hint never costs the student their check
                return None
        line, picture = last[1].get((record.function, record.key), (None, None))
        if picture:
            _show(picture)
        return line or None


# The notebook's kernel runs one student's functions: one namer, for as long as it runs.
NOTEBOOK_NAMER = NotebookNamer()


def plain_messages() -> None:
    """Have otter's exception-based test files show a failed check (`CheckFailed`, whose
    message says everything) as its message alone, not under the question file's source line;
    any other exception as otter shows it. Installed once, where otter runs the question files
    itself (the notebook's `grader.check`, otter's own grading)."""
    try:
        from ...grading.questions import import_otter_test_files

        ExceptionTestFile = import_otter_test_files()
    except ImportError:
        return
    original = ExceptionTestFile._generate_error_message
    if getattr(original, "plain_check_messages", False):
        return
    from ...checking.checks import CheckFailed

    def message(self, excp: Exception, context: int = 0) -> str:
        if isinstance(excp, CheckFailed):
            return str(excp).strip()
        return original(self, excp, context)

    message.plain_check_messages = True   # type: ignore[attr-defined]
    ExceptionTestFile._generate_error_message = message
