"""The context of a check: which of the four ways `Question.check` runs, as an argument.

* `GRADE`: `autograder grade`; the student's functions are stand-ins that run each call in the
  sandboxed worker (`grade.RemoteFunction`), and a diagnosis `session` keeps every check for
  naming mistakes once the submission's last call is made;
* `CHECK`: a student's own check (`autograder check`, and the notebook's naming run below); the
  functions are the student's own, in this process, with a `session` as in `GRADE`;
* `NOTEBOOK`: otter's `grader.check` in a notebook, or `otter run`: otter runs the question
  files itself, with no runner and no session, so a failing check names its likely mistake
  there and then (`Question.check`, with `platforms.notebook_hints`);
* `RECORD`: `autograder snapshot` (and lint): public cases take their expected values from the
  live reference and store them in the `recording` (`expected.py`).

The context reaches the check with the student's names themselves. A runner hands each case its
names as `Submitted` values (the value and the context: `run_question` binds them); otter hands
the bare values, and a check that receives a bare value runs in the `NOTEBOOK` context. So the
question files keep otter's format, and a case never says which way it runs.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Mode(str, enum.Enum):
    GRADE = "grade"
    CHECK = "check"
    NOTEBOOK = "notebook"
    RECORD = "record"


@dataclass
class Recording:
    """What recording the reference's public outcomes collects: {question: {case key: entry}}
    in `store`, and per question the tolerance table its snapshot is rounded within."""

    store: dict = field(default_factory=dict)
    tolerances: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CheckContext:
    """How one run checks: its `mode`, the diagnosis `session` that keeps its checks (GRADE,
    CHECK; `diagnose.Session`), and where RECORD stores expected outcomes."""

    mode: Mode
    session: Any = None
    recording: Recording | None = None

    def __post_init__(self) -> None:
        if (self.mode is Mode.RECORD) != (self.recording is not None):
            raise ValueError("a recording goes with the RECORD mode, and only with it")

    def note(self, record: Any, passed: bool, case: Any = None) -> None:
        """Keep one check for naming mistakes, where a session collects them."""
        if self.session is not None:
            self.session.note(record, passed, case)


# Where a check receives a bare value: otter runs the question files (see the module's note).
NOTEBOOK = CheckContext(Mode.NOTEBOOK)


class Submitted:
    """One of the student's names as a runner hands it to a case: its `value` (a function, a
    stand-in that runs it in the worker, an answer, or None where the file lacks it) and the
    `context` of the run. Calling it calls the value: a question file's own call."""

    __slots__ = ("value", "context")

    def __init__(self, value: Any, context: CheckContext):
        self.value, self.context = value, context

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.value(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Submitted({self.value!r}, {self.context.mode.value})"


def bind(env: dict[str, Any], context: CheckContext) -> dict[str, Any]:
    """What the cases of a runner's run receive: every name with the run's context."""
    return {name: Submitted(value, context) for name, value in env.items()}


def unbind(value: Any) -> tuple[Any, CheckContext]:
    """A case's argument as (the student's value, the check's context): a bare value is
    otter's, and runs in the NOTEBOOK context."""
    if isinstance(value, Submitted):
        return value.value, value.context
    return value, NOTEBOOK
