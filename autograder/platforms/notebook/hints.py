"""Named mistakes where otter runs the question files: the notebook's `grader.check` cells, and
otter's own grading.

Otter runs a question's cases in the student's kernel, one question at a time, outside the
grader's runner: no diagnosis session collects the checks there, so nothing would be named.
When a check fails there, `Question.check` asks `hint` here: it runs the public cases once on
the student's current functions (those of the namespace the failing function was defined in) as
`autograder check` does (the same `run_question`, the same shipped table of mistakes'
outcomes) and returns that check's "likely mistake" line, which otter then shows with the
message, and shows its heatmaps (`autograder.pictures`) under the cell. So a notebook names what
`check` names, in the same words. The run is kept for as long as the student's functions are
the same objects; what their code prints meanwhile is not shown.
"""
from __future__ import annotations

import contextlib
import io
from typing import Any

from ...diagnose import Session
from ...grading.questions import run_question

# The latest run: (the student's functions and answers, {(function, call digest): (hint,
# picture)}).
_last: tuple[list, dict] | None = None


def _hints(assignment: Any, env: dict) -> dict:
    """{(function, call digest): hint} for every failing public check, named as `check` names
    it."""
    session = Session(assignment)
    session.public_only = True
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        with session:
            results = {q.id: run_question(assignment, q.id, env, include_hidden=False)
                       for q in assignment.questions}
        session.apply(results)
    return {(r.function, r.key): (c.hint, c.picture) for r, c in session.failed
            if c.hint or c.picture}


def _show(picture: dict) -> None:
    """The heatmaps under the cell, when this runs in a notebook's kernel."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, display

        if get_ipython() is not None:
            from ...pictures.draw import png

            display(Image(png(picture)))
    except Exception:  # noqa: BLE001 - a picture never costs the student their check
        pass


def hint(record: Any, student: Any) -> str | None:
    """The "likely mistake" line `autograder check` gives this failing public check, or None;
    in a notebook, its heatmaps are shown under the cell (`autograder.pictures`)."""
    global _last
    namespace = getattr(student, "__globals__", None)
    if not isinstance(namespace, dict):
        return None
    assignment = record.assignment
    env = {name: namespace.get(name) for name in list(assignment.api) + list(assignment.answers)}
    current = list(env.values())
    if _last is None or len(_last[0]) != len(current) or \
            any(a is not b for a, b in zip(_last[0], current)):
        try:
            _last = (current, _hints(assignment, env))
        except Exception:  # noqa: BLE001 - a hint never costs the student their check
            return None
    line, picture = _last[1].get((record.function, record.key), (None, None))
    if picture:
        _show(picture)
    return line or None
