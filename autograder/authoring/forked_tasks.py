"""Run many small tasks in worker processes forked from this one, each task time-boxed: a task
that runs past its deadline has its worker killed (and a new one forked for the rest), one that
kills its worker (a crash) is reported as such, and neither stops the run.

Made for `autograder mutants`, whose tasks run code derived from the assignment's own reference
(trusted, but a mutant may loop or allocate without end). Workers are forked after the caller
has computed what every task shares (the reference's outcomes), so they start with it; a
worker keeps its own caches across the tasks it runs. Results travel back as JSON.
"""
from __future__ import annotations

import json
import os
import resource
import select
import signal
import struct
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

_HEADER = struct.Struct(">Q")


def _virtual_bytes() -> int | None:
    """This process's address space now (Linux), or None where /proc cannot tell."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _limit_memory(extra_mb: int | None) -> None:
    """Let the next task grow the address space by at most `extra_mb` (soft limit only, so
    that it can be set again for the task after)."""
    now = _virtual_bytes()
    if not extra_mb or now is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = now + extra_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ValueError, OSError):
        pass


def _read_exact(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _serve(task: Callable[[int], dict], requests: int, results: int,
           memory_mb: int | None) -> None:
    """A worker's loop: read a task's index, run it, write its result; until the pipe closes."""
    # What the tasks' code prints is not the run's output, whichever way it writes.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the parent's to handle
    while True:
        raw = _read_exact(requests, 8)
        if raw is None:
            return
        index = _HEADER.unpack(raw)[0]
        _limit_memory(memory_mb)
        try:
            result = task(index)
        except MemoryError:
            result = {"status": "memory", "detail": "MemoryError"}
        except BaseException as e:  # noqa: BLE001 - a task never ends its worker
            result = {"status": "task_error", "detail": f"{type(e).__name__}: {e}"[:300]}
        try:
            payload = json.dumps(result).encode()
        except (TypeError, ValueError) as e:
            payload = json.dumps({"status": "task_error", "detail": str(e)[:300]}).encode()
        _write_all(results, _HEADER.pack(len(payload)) + payload)


@dataclass
class _Worker:
    pid: int
    requests: int       # the parent's end: task indexes go out here
    results: int        # and results come back here
    index: int | None = None
    deadline: float = 0.0
    started: float = field(default=0.0)


def _fork_worker(task: Callable[[int], dict], memory_mb: int | None,
                 others: list[_Worker]) -> _Worker:
    """A new worker; `others`: the workers already running, whose pipes it must not hold (a
    copy of another worker's request pipe would keep that worker from ever seeing its end)."""
    req_r, req_w = os.pipe()
    res_r, res_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(req_w)
            os.close(res_r)
            for other in others:
                os.close(other.requests)
                os.close(other.results)
            _serve(task, req_r, res_w, memory_mb)
        except BaseException:  # noqa: BLE001 - the child never returns into the caller
            code = 1
        os._exit(code)
    os.close(req_r)
    os.close(res_w)
    return _Worker(pid, req_w, res_r)


def _stop(worker: _Worker, kill: bool) -> int | None:
    """Close the worker's pipes and reap it (killed first with `kill`): the signal that ended
    it, if one did."""
    for fd in (worker.requests, worker.results):
        try:
            os.close(fd)
        except OSError:
            pass
    if kill:
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        _, status = os.waitpid(worker.pid, 0)
    except ChildProcessError:
        return None
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else None


def run_forked(count: int, task: Callable[[int], dict], *, jobs: int, seconds: float,
               memory_mb: int | None = None,
               done: Callable[[int, dict], None] | None = None) -> list[dict]:
    """`task(i)` for i in range(count), in `jobs` forked workers, each call within `seconds`
    of wall-clock time and `memory_mb` more address space; the results in order. A call past
    its time is `{"status": "timeout"}`, one whose worker died `{"status": "crashed"}`, one that
    raised `{"status": "task_error"}` (or `"memory"` for a MemoryError). `done(i, result)` is
    called as each one finishes."""
    results: list[dict | None] = [None] * count
    pending = deque(range(count))
    workers: list[_Worker] = []

    def finish(worker: _Worker, result: dict) -> None:
        result.setdefault("seconds", round(time.monotonic() - worker.started, 3))
        results[worker.index] = result
        if done is not None:
            done(worker.index, result)
        worker.index = None

    try:
        while pending or any(w.index is not None for w in workers):
            while pending and (len(workers) < max(1, jobs)
                               or any(w.index is None for w in workers)):
                idle = next((w for w in workers if w.index is None), None)
                if idle is None:
                    idle = _fork_worker(task, memory_mb, workers)
                    workers.append(idle)
                idle.index = pending.popleft()
                idle.started = time.monotonic()
                idle.deadline = idle.started + seconds
                try:
                    _write_all(idle.requests, _HEADER.pack(idle.index))
                except OSError:     # the worker is gone: the task is retried in a new one
                    pending.appendleft(idle.index)
                    idle.index = None
                    _stop(idle, kill=True)
                    workers.remove(idle)
            busy = [w for w in workers if w.index is not None]
            wait = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready, _, _ = select.select([w.results for w in busy], [], [], wait)
            for worker in busy:
                if worker.results in ready:
                    raw = _read_exact(worker.results, 8)
                    payload = None if raw is None else _read_exact(
                        worker.results, _HEADER.unpack(raw)[0])
                    if payload is not None:
                        finish(worker, json.loads(payload))
                        continue
                    sig = _stop(worker, kill=True)
                    workers.remove(worker)
                    finish(worker, {"status": "crashed",
                                    "detail": f"signal {sig}" if sig else "the worker ended"})
                elif time.monotonic() >= worker.deadline:
                    _stop(worker, kill=True)
                    workers.remove(worker)
                    finish(worker, {"status": "timeout",
                                    "detail": f"still running after {seconds:g} s"})
    finally:
        for worker in workers:
            _stop(worker, kill=worker.index is not None)
    return [r if r is not None else {"status": "crashed", "detail": "not run"}
            for r in results]
