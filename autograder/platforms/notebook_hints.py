"""Named mistakes in the notebook's `grader.check` cells (otter's checks).

Otter runs a question's cases in the student's kernel, one question at a time, outside the
grader's runner: no diagnosis session collects the checks there, so nothing would be named. The
notebook's setup cell imports this module, which registers a hook with `autograder.cases`: when
a public case fails there, it runs the public cases once on the student's current functions,
as `autograder check` does (the same runner, the same shipped table of mistakes' outcomes), and
adds that case's "likely mistake" line to the message otter shows. So the notebook names what
`check` names, with the same words. The run is cached for as long as the student's functions
are the same objects; what the student's code prints meanwhile is not shown again.
"""
from __future__ import annotations

import contextlib
import io
import types
from typing import Any

from .. import cases
from ..diagnose import Session
from ..grade import student_env
from ..runner import run_question

# The latest run: (the student's functions and answers, {(function, call digest): hint}).
_last: tuple[list, dict] | None = None


def _hints(assignment, env: dict) -> dict:
    """{(function, call digest): hint} for every failing public check, named as `check`
    names it."""
    session = Session(assignment)
    session.public_only = True
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with session:
            results = {q.id: run_question(assignment, q.id, env, include_hidden=False)
                       for q in assignment.questions}
        session.apply(results)
    return {(r.function, r.key): c.hint for r, c in session.failed if c.hint}


def hint(record: Any, student: Any) -> str | None:
    """The "likely mistake" line `autograder check` gives this failing public check."""
    global _last
    namespace = getattr(student, "__globals__", None)
    if not isinstance(namespace, dict):
        return None
    assignment = record.assignment
    module = types.ModuleType("notebook")
    module.__dict__.update(namespace)
    env = student_env(assignment, module)
    current = list(env.values())
    if _last is None or len(_last[0]) != len(current) or \
            any(a is not b for a, b in zip(_last[0], current)):
        _last = (current, _hints(assignment, env))
    return _last[1].get((record.function, record.key))


cases.failure_hint = hint
