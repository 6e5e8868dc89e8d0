"""The trust boundary: everything that runs student code, starts it, or talks to it.

Theory of operation
===================

Processes (one line of descent each; arrows are "starts"):

    grader (`autograder grade`: the verdict, the reports; never imports student code)
      -> grading process (one per job: the reference, the hidden cases, the comparisons)
           -> fork server (`forkserver.py`: imports torch once, holds nothing secret)
                -> worker (`worker.py`: one per submission, imports the student's source)

* **grader** and **grading process** are trusted. A grading process is undumpable and dies
  with the grader (PR_SET_PDEATHSIG). It holds one `client.Sandbox` (its fork server) and, per
  submission, one `session.WorkerSession` (the trusted client of that submission's worker).
  In a class run with several jobs, the grader starts every grading process's fork server
  itself and then forks the grading processes, having imported torch once for all of them
  (`course/batch._forked_start`): each fork server is then the grader's child, which waits for
  it, but only its own grading process talks to it (`Sandbox.adopt`, `Sandbox.detach`).
* **fork server** runs at the chosen level (`levels.py`): under bubblewrap (`namespaces`:
  no network, a private file system holding the Python installation and *only this package* of
  the engine, private IPC/UTS/PIDs), or as root without it (`user`: the fork server makes the
  same file system itself, `mounts.build_root`, and leaves the network), or as the grader's own
  user (`rlimits`). Its environment is scrubbed. It never runs student code: it forks.
* **worker** is forked from the fork server (one fork). Before any student code runs it gets,
  where the level allows, its own PID namespace (it is that namespace's init, so its death ends
  everything it started) with a private /proc, its own mount and IPC namespaces (one capped
  tmpfs for all it writes, capped System V IPC: `mounts.scratch`, `ipc.limit_namespace`), an
  unprivileged uid with no supplementary groups, no new privileges, rlimits (address space,
  CPU, processes, file size, open files, message queues, no core), a fresh empty working
  directory, stdout/stderr that keep nothing, and a scrubbed environment.

Channels, and what crosses them:

* grading process <-> fork server: a socket of JSON lines. Requests: `spawn` (a worker's
  limits, its uid, its forbidden names and what refuses each, and the worker's socket as a
  passed file descriptor), `armed` (whether a worker's refusals hold, read from
  `/proc/<pid>/limits`: `armed.py`), `finish` (stop a worker, report its exit), `preload`
  (import library modules of dotted names and build what arming the first worker of a
  submission takes, once). Replies are short JSON objects read with a timeout.
* grading process <-> worker: one socket per worker, framed by `wire.pack`/`wire.Reader`: a
  JSON header and length-prefixed byte buffers, every size checked before it is read. The
  trusted side sends the student's source as text (never a path), then one `call` per case:
  the function name, the inputs and upstream gradient as plain arrays, the forbidden names. The
  worker replies with an *outcome* (`protocol.py`): plain arrays, short strings, lists of
  names. Nothing is ever unpickled; everything the worker says is validated (`decode_outcome`,
  `session.py`) and is at most evidence, never a verdict. A reply that does not validate (a
  wrong type anywhere, a forged frame) ends that submission, flagged for review
  (`session.MalformedReply`); what one reply may cost the trusted side is bounded (`wire.py`).
* time: the trusted side enforces per-question and per-submission wall-clock limits by asking
  the fork server to SIGKILL the worker; the worker's own signal handlers cannot delay that.
* exit status: the one thing the worker cannot forge. Its checks that must hold end it with a
  status naming what they refused (`evidence.py`), read by the fork server: a forbidden
  routine reached (refused at torch's dispatcher, in the library function itself, in library
  code performing its signature, or in a compiler that runs past the dispatcher: `guard.py`)
  or an escape refused by the audit hook (`audit.py`). The refusals hold once the student's
  file is imported; the trusted side sends no call before the fork server reads that they do.

Inside the worker, before the student's source runs (`worker.protect`): an audit hook (PEP 578,
which Python cannot remove) refuses what CPython audits as ways to the worker's own code and
state: frames, the collector's object lists, ctypes, building code or functions, marshal,
pickle's find_class, trace and profile hooks, the process's own /proc files, importing the
engine again. The engine's modules leave `sys.modules` and the fork server's `__main__` is
emptied; the state of the checks lives in closures and torch's dispatcher, never in a module
global. What the hook holds against is Python-level: native code (a compiled extension, a bug
in one) runs below its audit points, and there only the sandbox level (user, namespaces,
rlimits, file view) holds. docs/trust-model.md says what each layer covers.

This package imports nothing from the rest of the engine (a test asserts it), so the sandbox
mounts only this package. `execute.py` is the one module that also runs in the student's own
process (`autograder check`, otter), where none of the isolation above applies.
"""
from .client import Sandbox
from .errors import SandboxError
from .levels import LEVELS, choose_level, protect_this_process

__all__ = ["LEVELS", "Sandbox", "SandboxError", "choose_level", "protect_this_process"]
