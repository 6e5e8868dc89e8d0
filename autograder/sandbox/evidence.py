"""Hard evidence from the worker: an exit status the student's code cannot hide.

The worker is the student's process: what it *sends* can be forged (the student can write to its
channel), but how it *ends* is read by the fork server, outside it. So the checks that must hold
(`guard.py`: a forbidden routine reached; `audit.py`: an escape refused) end the worker at once
with an exit status that names what happened, before the student's code gets control back; the
seccomp filter (`seccomp.py`) kills a worker that tries to start a process with SIGSYS. A
student can end their own process with such a status too, which only costs them; they cannot
undo one. A worker that cannot install its refusals ends with a status of its own before the
student's source is imported (`UNARMED`).
"""
from __future__ import annotations

UNARMED_EXIT = 150         # + the index of the reason in UNARMED: no student code ran
FORBIDDEN_EXIT = 160       # + the index of the routine in the worker's forbidden names
MAX_FORBIDDEN = 32
ESCAPE_EXIT = 200          # + the index of the escape in ESCAPES
SIGSYS = 31                # the seccomp filter's kill (`seccomp.py`): a process refused

# Why a worker could not install its refusals (index = exit status - UNARMED_EXIT). It ends
# before the student's source is imported: the question is not graded (fail closed).
UNARMED = (
    "this torch has no API to register refusing kernels at its dispatcher",
    "registering the refusing kernels at torch's dispatcher failed",
    "a forbidden library function could not be replaced",
    "the seccomp filter refusing a second process could not be installed",
)

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
    "starting another process (fork, exec, spawn, subprocess, multiprocessing)",
)


PROCESS = len(ESCAPES) - 1


def read_end(info: dict) -> tuple[str, int] | None:
    """How a worker ended (the fork server's {"exit": status} or {"signal": number}) as
    evidence: ("forbidden", index), ("escape", index) or ("unarmed", index); else None. The
    seccomp filter's kill (SIGSYS) is the escape "starting another process"."""
    if info.get("signal") == SIGSYS:
        return "escape", PROCESS
    return read_exit(info.get("exit"))


def read_exit(code: int | None) -> tuple[str, int] | None:
    """("forbidden", index), ("escape", index) or ("unarmed", index) for a worker's exit
    status, else None."""
    if code is None:
        return None
    if UNARMED_EXIT <= code < UNARMED_EXIT + len(UNARMED):
        return "unarmed", code - UNARMED_EXIT
    if FORBIDDEN_EXIT <= code < FORBIDDEN_EXIT + MAX_FORBIDDEN:
        return "forbidden", code - FORBIDDEN_EXIT
    if ESCAPE_EXIT <= code < ESCAPE_EXIT + len(ESCAPES):
        return "escape", code - ESCAPE_EXIT
    return None
