"""Hard evidence from the worker: an exit status the student's code cannot hide.

The worker is the student's process: what it *sends* can be forged (the student can write to its
channel), but how it *ends* is read by the fork server, outside it. So the checks that must hold
(`guard.py`: a forbidden routine reached; `audit.py`: an escape refused) end the worker at once
with an exit status that names what happened, before the student's code gets control back. A
student can end their own process with such a status too, which only costs them; they cannot
undo one.
"""
from __future__ import annotations

FORBIDDEN_EXIT = 160       # + the index of the routine in the call's forbidden names
MAX_FORBIDDEN = 32
ESCAPE_EXIT = 200          # + the index of the escape in ESCAPES

# What the audit hook refuses, in words for the feedback (index = exit status - ESCAPE_EXIT).
ESCAPES = (
    "reading the call stack's frames (sys._getframe, a traceback's or generator's frame)",
    "listing the interpreter's objects (gc.get_objects, get_referrers, get_referents)",
    "ctypes",
    "building code or function objects (code.__new__, code.replace, types.FunctionType)",
    "loading code with marshal",
    "unpickling a class or function (pickle's find_class)",
    "a trace or profile hook (sys.settrace, sys.setprofile)",
    "opening the process's own /proc files",
    "adding an audit hook",
    "importing the grader's own modules",
    "replacing a function's code (__code__)",
    "changing the grader's classes",
)


def read_exit(code: int | None) -> tuple[str, int] | None:
    """("forbidden", index) or ("escape", index) for a worker's exit status, else None."""
    if code is None:
        return None
    if FORBIDDEN_EXIT <= code < FORBIDDEN_EXIT + MAX_FORBIDDEN:
        return "forbidden", code - FORBIDDEN_EXIT
    if ESCAPE_EXIT <= code < ESCAPE_EXIT + len(ESCAPES):
        return "escape", code - ESCAPE_EXIT
    return None
