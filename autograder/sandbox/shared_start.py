"""Starting the fork server as a fork of the grading process, so both share one torch.

Every process that imports torch holds about 140 MiB of its own anonymous memory (the C++
operator registry, the Python modules) before it computes anything. A grading process and a
fork server started apart hold two copies; in a 768 MB container (Gradescope) that is the room
a student's tensors would need. Forked after `import torch`, the fork server shares those pages
copy-on-write with the grading process, and its workers share them too.

Only the `user` and `rlimits` levels can start this way (bubblewrap must exec), and only at the
grading process's first start, before it has read anything secret: the caller checks that
(`batch._nothing_secret_loaded`). In the child, before the fork server's own set-up (which
then builds its file system and drops to the sandbox's view as usual): default signal
handlers, stdin/stdout on /dev/null, stderr to the errors file, every other descriptor closed,
the working directory `/`, the scrubbed environment, and the grading process's original
environment and command line overwritten in memory (`/proc/<pid>/environ` and `cmdline` read
that memory). A worker can still read anything the grading process held in memory before the
fork, freed or not: the engine's own code, the assignment's public settings, and copies of its
environment and arguments. So the grading process must be started with nothing secret in them:
`autograder.platforms.gradescope` gives it a minimal environment (PATH, locale, HOME, thread counts).
"""
from __future__ import annotations

import gc
import os
import signal
import tempfile
import threading
import time
from typing import Callable

from .levels import SCRUBBED_ENV


# Thread pools that numerical libraries start as soon as they are loaded (OpenBLAS, under
# numpy: one thread per core but one, unless these say 1): a fork keeps only the calling
# thread, so a grading process holding such a pool cannot fork the fork server.
POOL_AT_LOAD = ("OPENBLAS_NUM_THREADS",)


def prepare() -> None:
    """Called before numpy is loaded, when `--share-torch` is asked: whatever the thread
    variables say (OMP_NUM_THREADS=4, or nothing), the libraries that would start a pool at
    load start none in this process. The workers get one thread each anyway (the scrubbed
    environment), and the grading process only compares small arrays."""
    import sys

    if "numpy" in sys.modules:
        return   # too late: can_share will say why, if a pool is running
    for name in POOL_AT_LOAD:
        os.environ[name] = "1"


def can_share() -> str | None:
    """None if this process may fork the fork server now, else why not."""
    threads = other_threads()
    if threads == "python":
        return "the grading process runs other threads (several grading jobs?)"
    if threads == "native":
        return "the grading process runs native threads (a numerical library's pool, " \
               "started before --share-torch could prevent it)"
    return threads


def other_threads() -> str | None:
    """None if this process runs one thread only, so that a fork of it is safe (a fork keeps
    only the calling thread, and another could hold a lock the child needs); else "python",
    "native" (such as a numerical library's pool) or why it cannot be known."""
    if threading.active_count() != 1:
        return "python"
    # A thread that was just joined can still be listed for a moment: `join` returns when the
    # thread's Python part is done, before its native exit. Give such a thread a few ms to go
    # (and a pool that stays costs only that) rather than fork beside its exit.
    deadline = time.monotonic() + 0.02
    while True:
        try:
            if len(os.listdir("/proc/self/task")) == 1:
                return None
        except OSError:
            return "no /proc"
        if time.monotonic() > deadline:
            return "native"
        time.sleep(0.001)


def without_pools_at_load(load: Callable[[], object]) -> None:
    """Run `load` (an import of numerical libraries) with the variables of `POOL_AT_LOAD` at 1,
    so that the libraries it loads start no thread pool, then restore the environment: the
    variables are read once, at load."""
    saved = {name: os.environ.get(name) for name in POOL_AT_LOAD}
    os.environ.update({name: "1" for name in POOL_AT_LOAD})
    try:
        load()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def import_torch() -> None:
    """Import torch here, one intra-op thread (no pool started: nothing has run yet)."""
    import torch

    torch.set_num_threads(1)
    gc.collect()
    # The objects so far move out of the collector's reach: a collection in either process
    # would otherwise write to, and so copy, every page of the shared heap.
    gc.freeze()


class ForkedProcess:
    """The part of `subprocess.Popen` the sandbox uses, for a forked child."""

    def __init__(self, pid: int):
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                done, status = self.pid, 0
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"fork server {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _overwrite_own(field_start: int, field_end: int) -> None:
    """Zero a range of this process's memory named by /proc/self/stat (1-based fields)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the 3rd field of the line (the state)
    start, end = int(fields[field_start - 3]), int(fields[field_end - 3])
    if 0 < start < end and end - start < 1 << 24:
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            mem.write(b"\0" * (end - start))


def become_forkserver(control_fd: int, errors_fd: int, args: tuple) -> None:
    """In the forked child: leave the grading process behind, then serve as the fork server
    (`forkserver.main(control_fd, *args)`). Never returns."""
    code = 70
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(errors_fd, 2)
        for fd in (devnull, errors_fd):
            if fd > 2 and fd != control_fd:
                os.close(fd)
        os.closerange(3, control_fd)
        os.closerange(control_fd + 1, 65536)
        os.chdir("/")
        _overwrite_own(50, 51)     # env_start, env_end: the original environment
        _overwrite_own(48, 49)     # arg_start, arg_end: the original command line
        os.environ.clear()
        os.environ.update(SCRUBBED_ENV)
        # tempfile caches the grading process's TMPDIR on first use: a folder that does not
        # exist in the fork server's own file system (the `user` level builds it; only /tmp
        # is there). Forgotten, it is found again from the scrubbed environment, as a fork
        # server started apart finds it.
        tempfile.tempdir = None
        from .forkserver import main

        main(control_fd, *args)
        code = 0
    finally:
        os._exit(code)
