"""When a worker's refusals hold: from the end of the student's import on, for good.

The refusals are installed before the student's file runs, but until the import is over they
let the library run (`guard.py`): a file that compares itself with `torch.softmax` at its top
level (a self-test, no `__main__` guard) costs nothing, since no graded input exists yet. From
the moment the import ends, every refusal holds.

The switch is a fact about the process that only ever goes one way and that the fork server
reads from outside: the hard limit of `RLIMIT_RTTIME` (CPU time under a real-time scheduling
policy, which a worker never has) is 0. An unprivileged process can lower a hard limit and never
raise it again; the audit hook refuses raising it to anyone (`audit.py`), for a worker that runs
as root. Each refusal reads the limit (`getrlimit`, a system call); the worker lowers it once
its import is done (`arm`); and the trusted side sends no graded call before the fork server
has read, from `/proc/<pid>/limits`, that it is 0 (`armed_pid`). A file whose import takes
over the worker's channel and never returns gains nothing: its worker never reads as armed,
and nothing is graded in it. A file that lowers the limit itself only arms its refusals.
"""
from __future__ import annotations

import resource

RESOURCE = resource.RLIMIT_RTTIME
ARMED_SOURCE = 'def armed():\n    return "@getrlimit"("@resource")[1] == 0\n'
ALWAYS_SOURCE = 'def armed():\n    return True\n'
LIMITS_LINE = "Max realtime timeout"


def reader(isolated) -> object:
    """The function every refusal calls: True once the refusals hold."""
    return isolated(ARMED_SOURCE, {"@getrlimit": resource.getrlimit, "@resource": RESOURCE},
                    "armed")


def always(isolated) -> object:
    """The same for the student's own process, where a refusal holds while it is in place."""
    return isolated(ALWAYS_SOURCE, {}, "armed")


def arm() -> bool:
    """Make this process's refusals hold, for good. False if the limit could not be lowered."""
    try:
        resource.setrlimit(RESOURCE, (0, 0))
    except (ValueError, OSError):
        return False
    return resource.getrlimit(RESOURCE)[1] == 0


def is_armed() -> bool:
    return resource.getrlimit(RESOURCE)[1] == 0


def armed_pid(pid: int) -> bool:
    """Whether process `pid`'s refusals hold (its `RLIMIT_RTTIME` hard limit reads 0)."""
    try:
        with open(f"/proc/{int(pid)}/limits", encoding="ascii") as f:
            for line in f:
                if line.startswith(LIMITS_LINE):
                    fields = line[len(LIMITS_LINE):].split()
                    return len(fields) >= 2 and fields[1] == "0"
    except OSError:
        return False
    return False
