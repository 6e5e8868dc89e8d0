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

LIBRARY_EXIT = 100         # + the index of the routine whose signature library code ran
COMPILER_EXIT = 140        # + the index of the compiler in COMPILERS
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
    "the refusals did not hold once the file was imported",
)
# Compilers inside torch refused outright (index = exit status - COMPILER_EXIT): `bypass.py`.
COMPILERS = ("torch's TensorExpr (NNC) compiler", "torch's static runtime")
COMPILER_NAMES = ("torch._C._te", "torch._C._jit_to_static_module")

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
    "raising the resource limit that makes the worker's refusals hold",
)


PROCESS = ESCAPES.index("starting another process (fork, exec, spawn, subprocess, "
                        "multiprocessing)")


def read_end(info: dict) -> tuple[str, int] | None:
    """How a worker ended (the fork server's {"exit": status} or {"signal": number}) as
    evidence: ("forbidden", index), ("library", index), ("compiler", index), ("escape", index)
    or ("unarmed", index); else None. The seccomp filter's kill (SIGSYS) is the escape
    "starting another process"."""
    if info.get("signal") == SIGSYS:
        return "escape", PROCESS
    return read_exit(info.get("exit"))


def read_exit(code: int | None) -> tuple[str, int] | None:
    """("forbidden" | "library" | "compiler" | "escape" | "unarmed", index) for a worker's exit
    status, else None."""
    if code is None:
        return None
    if LIBRARY_EXIT <= code < LIBRARY_EXIT + MAX_FORBIDDEN:
        return "library", code - LIBRARY_EXIT
    if COMPILER_EXIT <= code < COMPILER_EXIT + len(COMPILERS):
        return "compiler", code - COMPILER_EXIT
    if UNARMED_EXIT <= code < UNARMED_EXIT + len(UNARMED):
        return "unarmed", code - UNARMED_EXIT
    if FORBIDDEN_EXIT <= code < FORBIDDEN_EXIT + MAX_FORBIDDEN:
        return "forbidden", code - FORBIDDEN_EXIT
    if ESCAPE_EXIT <= code < ESCAPE_EXIT + len(ESCAPES):
        return "escape", code - ESCAPE_EXIT
    return None


def exit_code(kind: str, index: int) -> int:
    """The exit status a refusal of `kind` ("routine", "library", "compiler") ends a worker with."""
    if kind == "compiler":
        return COMPILER_EXIT + index
    base = LIBRARY_EXIT if kind == "library" else FORBIDDEN_EXIT
    return base + min(index, MAX_FORBIDDEN - 1)


# -- the words of a refusal: the same in `autograder check` and in the grade

def refusal_message(fn: str, routine: str, kind: str = "routine", noun: str = "tensor",
                    explain: str = "", source: list[str] = ()) -> str:
    """The feedback of a forbidden call of `fn`: `routine` as the question names it, `kind`
    how it was refused ("routine": called; "library": library code computing it; "compiler":
    a compiler inside torch), `explain` the assignment's own words for the routine."""
    shows = f" (your source: {'; '.join(source[:3])})" if source else ""
    why = explain or (f"which this question asks you to write yourself; implement it with "
                      f"basic {noun} operations")
    if kind == "library":
        return (f"{fn} ran library code that computes what `{routine}` computes{shows} (a "
                f"library function doing that whole computation counts as calling it), {why}")
    if kind == "compiler":
        what = COMPILERS[COMPILER_NAMES.index(routine)] if routine in COMPILER_NAMES else routine
        return (f"{fn} used {what} (`{routine}`){shows}, which computes torch's operators past "
                f"the grader's check of forbidden routines; implement it with basic {noun} "
                "operations")
    return f"{fn} called `{routine}`{shows}, {why}"


def import_refusal_message(routine: str, kind: str = "routine") -> str:
    """The feedback of a refusal while the file was imported (only what is refused from the
    start is: torch's Python implementations of the routines, and its compilers)."""
    what = {"compiler": f"used `{routine}`, a compiler torch runs past the check of forbidden "
                        "routines",
            "library": f"ran library code computing what `{routine}` computes, which this "
                       "question asks you to write yourself"}.get(
        kind, f"called `{routine}`, which this question asks you to write yourself")
    return (f"importing your file {what}: the code at the top level of your file runs under "
            "this question's check too (put a demo or a comparison with the library under "
            "`if __name__ == \"__main__\":`)")
