"""The trusted handle on one fork server: start it at a level, spawn and finish workers.

The grading process holds one `Sandbox`; it asks the fork server (`forkserver.py`, inside the
sandbox) for a worker per submission over a control socket of JSON lines, and hands each worker's
own socket to a `session.WorkerSession`. Every answer of the fork server is read with a timeout.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import socket
import subprocess
import tempfile
import time

from . import cgroup, procfs, shared_start
from .errors import SandboxError
from .levels import (BASE_UID, LEVEL_DESCRIPTIONS, SANDBOX_ENGINE_ROOT, SCRUBBED_ENV,
                     bwrap_command, choose_level, file_view, forkserver_command, project_root)
from .limits import Limits

# What a worker's cgroup allowance adds for the fork server's pages it copies by writing to
# them (reference counts of shared objects): measured at about 60 MB for a grading worker.
COPIED_BYTES = 256 * 2**20


# ------------------------------------------------------------------ the fork server

class Sandbox:
    """One fork server; workers are created from it one submission at a time."""

    def __init__(self, level: str = "auto", slot: int = 0, wait: bool = True,
                 pid_namespaces: bool = True, worker_namespaces: bool = True,
                 share_torch: bool = False):
        """`pid_namespaces=False` keeps workers out of PID namespaces of their own even where
        they are possible (the fork server then kills what they leave as a subreaper);
        `worker_namespaces=False` likewise out of mount and IPC namespaces of their own (the
        fork server then removes what they leave). Both to try the fallbacks.
        `share_torch`: at the `user` and `rlimits` levels, import torch here and fork the fork
        server from this process (`shared_start.py`): the caller vouches that this process
        holds nothing secret yet."""
        self.level = choose_level(level)
        self.root = os.geteuid() == 0
        self.uid = BASE_UID + slot if self.root else None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = theirs.fileno()
        self._stage: str | None = None
        args: tuple = (pid_namespaces, None, None, False, worker_namespaces)
        if self.level == "namespaces":
            cmd = bwrap_command(forkserver_command(fd, SANDBOX_ENGINE_ROOT, pid_namespaces,
                                                   owns_tmp=True,
                                                   worker_namespaces=worker_namespaces),
                                self.root)
        elif self.level == "user":
            # No bubblewrap: the fork server makes the same file system itself, on an empty
            # folder of ours (removed at close), before any worker exists.
            self._stage = tempfile.mkdtemp(prefix="autograder-root-")
            args = (pid_namespaces, file_view(str(project_root())), self._stage, False,
                    worker_namespaces)
            cmd = forkserver_command(fd, str(project_root()), pid_namespaces,
                                     file_view(str(project_root())), self._stage,
                                     worker_namespaces=worker_namespaces)
        else:
            cmd = forkserver_command(fd, str(project_root()), pid_namespaces,
                                     worker_namespaces=worker_namespaces)
        # The fork server's own errors go to a file: a pipe nobody reads could fill and block.
        self.errors = tempfile.TemporaryFile()
        # One memory cgroup for the whole sandbox where this machine lets us make one: the fork
        # server enters it before it starts, and every worker is forked inside.
        self.group = cgroup.make_group(cgroup.sandbox_group_name(slot)) if self.root else None
        self._oom_kills = self.group.oom_kills() if self.group is not None else 0
        self.shared = False
        if not share_torch:
            why_not = "not asked for"
        elif self.level == "namespaces":
            why_not = "bubblewrap starts the fork server itself"
        else:
            why_not = shared_start.can_share()
        if why_not is None:
            shared_start.import_torch()
            pid = os.fork()
            if pid == 0:
                if self.group is not None:
                    self.group.enter()
                shared_start.become_forkserver(fd, self.errors.fileno(), args)
            self.proc = shared_start.ForkedProcess(pid)
            self.shared = True
        else:
            self.proc = subprocess.Popen(cmd, pass_fds=[fd], env=SCRUBBED_ENV, cwd="/",
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=self.errors,
                                         preexec_fn=None if self.group is None
                                         else self.group.enter)
        theirs.close()
        self._buf = b""
        self._next_id = 0
        self._preloaded: set[str] = set()
        self._forkserver_pid: int | None = None
        self._ready = False
        self._unanswered = 0     # finish requests whose answers nobody waits for
        self._reaped_by_starter = False     # handed to a fork of this process (`adopt`)
        if self.level == "namespaces" and not self.root:
            self.description = LEVEL_DESCRIPTIONS["namespaces-userns"]
        else:
            self.description = LEVEL_DESCRIPTIONS[self.level]
        if self.shared:
            self.description += "; fork server forked from the grading process (one torch)"
        elif share_torch:
            # Asked for and not done: say so, rather than use twice the memory unannounced.
            self.description += f"; fork server started apart, torch not shared: {why_not}"
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait for the fork server to have started (it imports torch: about a second)."""
        if self._ready:
            return
        ready = self._read_reply(timeout=120)
        if not ready.get("ready"):
            raise SandboxError("the sandbox's fork server did not start")
        self.pidns = bool(ready.get("pidns"))
        self.mechanisms = ready
        self.memory = memory_mechanisms(ready, self.uid if self.level != "rlimits" else None)
        if self.group is not None:
            self.memory = f"{self.group.describe()} (the fork server and its workers), " \
                + self.memory
            self._spare_forkserver()
        self.processes = process_mechanisms(ready)
        self.description += f"; memory: {self.memory}; processes: {self.processes}"
        self._ready = True

    def _read_reply(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            self.control.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.control.recv(65536)
            except (socket.timeout, ConnectionError):
                chunk = None
            if not chunk:
                err = b""
                if self.proc.poll() is not None:
                    self.errors.seek(0)
                    err = self.errors.read()[-2000:]
                raise SandboxError("the sandbox's fork server stopped answering"
                                   + (f": {err.decode(errors='replace')}" if err else ""))
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _spare_forkserver(self) -> None:
        """When the sandbox's cgroup runs out, the kernel kills the worker, never the fork
        server (workers raise their own score back: `forkserver._become_worker`)."""
        pid = _forkserver_pid(self.proc.pid)
        for p in {pid, self.proc.pid} - {None}:
            try:
                Path(f"/proc/{p}/oom_score_adj").write_text("-1000")
            except OSError:
                pass

    def _bound_memory(self, limits: Limits) -> None:
        """The sandbox's cgroup limit for the next worker: what the fork server holds now (no
        worker is left alive), plus what `limits.memory_mb` promises a worker (its address
        space, and as much again for files and shared memory), plus room for the pages of the
        fork server a worker copies by writing to them."""
        if self.group is None:
            return
        self._drain()
        self.group.set_limit(self.group.usage() + 2 * limits.memory_mb * 2**20 + COPIED_BYTES)

    def oom_killed(self) -> bool:
        """Whether the sandbox's cgroup killed a process since last asked."""
        if self.group is None:
            return False
        kills = self.group.oom_kills()
        killed, self._oom_kills = kills > self._oom_kills, kills
        return killed

    def spawn(self, limits: Limits, forbidden: tuple[str, ...] = (),
              plans: list[dict] | None = None) -> tuple[int, socket.socket, int]:
        """A new worker that refuses `forbidden` (each as its plan says, `routines.Plan`) for
        good once the student's file is imported, installed before the student's code runs
        (and installs the audit hook unless `limits.audit_hook` is 0)."""
        self.wait_ready()
        self._bound_memory(limits)
        self._next_id += 1
        wid = self._next_id
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        memory = self._memory_bytes(limits)
        req = {"op": "spawn", "id": wid, "uid": self.uid if self.level != "rlimits" else None,
               "forbidden": [str(n) for n in forbidden], "audit": bool(limits.audit_hook),
               "plans": list(plans) if plans is not None else [{} for _ in forbidden],
               "limits": {
                   "memory_bytes": memory,
                   "cpu_seconds": int(limits.submission_seconds * 2 + 30),
                   "file_bytes": limits.file_mb * 2**20,
                   "open_files": limits.open_files,
                   "processes": limits.processes,
                   "output_bytes": limits.output_kb * 1024,
                   # Files and shared memory are outside the address space: each gets half of
                   # the memory limit (see `memory_mechanisms`).
                   "scratch_bytes": limits.memory_mb * 2**20 // 2,
                   "shm_bytes": limits.memory_mb * 2**20 // 2}}
        try:
            socket.send_fds(self.control, [json.dumps(req).encode() + b"\n"], [theirs.fileno()])
        except OSError as e:
            ours.close()
            raise SandboxError(f"the sandbox's fork server stopped answering ({e})") from None
        finally:
            theirs.close()
        reply = self._reply(timeout=30)
        if not reply.get("spawned"):
            ours.close()
            raise SandboxError("the fork server could not start a worker")
        return wid, ours, memory

    def preload(self, names: list[str], ops: list[str] = (),
                arming: tuple[list[str], list[dict]] | None = None) -> None:
        """Have the fork server import the modules of these dotted names and look up what
        refusing them and the operators `ops` takes, and build what arming a worker for
        `arming` (names and their plans) takes, once: each worker then installs them without
        paying for it."""
        todo = [n for n in names if n not in self._preloaded]
        todo_ops = [o for o in ops if f"aten::{o}" not in self._preloaded]
        key = repr(arming) if arming else None
        if not todo and not todo_ops and (key is None or key in self._preloaded):
            return
        self.wait_ready()
        request: dict = {"op": "preload", "names": todo, "ops": todo_ops}
        if arming:
            request["arming"] = {"names": list(arming[0]), "plans": list(arming[1])}
        self._send(request)
        self._reply(timeout=120)
        self._preloaded.update(todo)
        self._preloaded.update(f"aten::{o}" for o in todo_ops)
        if key is not None:
            self._preloaded.add(key)

    def armed(self, wid: int) -> bool:
        """Whether worker `wid`'s refusals hold (read by the fork server, outside the worker:
        `armed.py`)."""
        self._send({"op": "armed", "id": wid})
        return self._reply(timeout=30).get("armed") is True

    def _memory_bytes(self, limits: Limits) -> int:
        # The worker inherits torch's address space from the fork server: the limit is on top.
        if self._forkserver_pid is None:
            self._forkserver_pid = _forkserver_pid(self.proc.pid)
        size = procfs.memory(self._forkserver_pid, "VmSize") if self._forkserver_pid else None
        return (size or 2 * 2**30) + limits.memory_mb * 2**20

    def finish(self, wid: int, grace: float = 0.0, wait: bool = True) -> dict:
        """Stop a worker; with `wait`, return how it ended (exit code or signal, peak memory).
        Without, the fork server's answer is read (and dropped) before the next one."""
        self._send({"op": "finish", "id": wid, "grace": grace})
        if not wait:
            self._unanswered += 1
            return {}
        info = self._reply(timeout=60)
        if self.oom_killed():
            info["cgroup_oom"] = True
        return info

    def _send(self, request: dict) -> None:
        # A fork server that is gone (Ctrl-C reaches it too) is the sandbox's failure, which
        # ends the run as such, not one submission's.
        try:
            self.control.sendall(json.dumps(request).encode() + b"\n")
        except OSError as e:
            raise SandboxError(f"the sandbox's fork server stopped answering ({e})") from None

    def _reply(self, timeout: float) -> dict:
        self._drain()
        return self._read_reply(timeout)

    def _drain(self) -> None:
        """Read (and drop) the answers to finish requests nobody waited for."""
        while self._unanswered:
            self._read_reply(timeout=60)
            self._unanswered -= 1

    def detach(self) -> None:
        """In the process that started the fork server, once a fork of it has taken the sandbox
        over (`adopt`): stop talking to the fork server. It ends when the process it was
        handed to closes; `close` here then waits for it and removes its cgroup."""
        self.control.close()

    def adopt(self) -> None:
        """In a fork of the process that started the fork server, which now has the sandbox to
        itself: `close` ends the conversation only, since the fork server is the starter's
        child, for the starter to wait for (`detach`)."""
        self._reaped_by_starter = True

    def close(self) -> None:
        try:
            self._drain()   # let the last workers' ends be answered first
        except (SandboxError, OSError, ValueError):
            pass
        if self._reaped_by_starter:
            self.control.close()
            self.errors.close()
            return
        try:
            self.control.close()
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.errors.close()
            if self.group is not None:
                self.group.remove()
            if self._stage:
                try:
                    os.rmdir(self._stage)
                except OSError:
                    pass


def process_mechanisms(ready: dict) -> str:
    """What keeps a worker alone (no second process), from the fork server's report."""
    if ready.get("seccomp"):
        return "none besides the worker (seccomp filter: no fork, exec or ptrace; audit hook)"
    return ("none besides the worker from Python (audit hook); no seccomp filter here, so "
            "native code is held only by the process limit")


def memory_mechanisms(ready: dict, uid: int | None) -> str:
    """What bounds a worker's memory, from the fork server's report of what works here."""
    parts = ["address space (rlimit)"]
    if ready.get("scratch"):
        parts.append("files and /dev/shm in a tmpfs capped at half the limit")
    if ready.get("ipc_limits"):
        parts.append("own IPC namespace, System V shared memory capped at half the limit")
    elif ready.get("ipcns"):
        parts.append("own IPC namespace (uncapped, freed with the worker)")
    elif ready.get("cleanup") or uid is not None:
        parts.append("IPC objects and temporary files of the worker removed after it "
                     "(uncapped while it runs)")
    else:
        parts.append("shared memory and files uncapped and not removed")
    return ", ".join(parts)


def _forkserver_pid(pid: int) -> int | None:
    """The fork server's process: `pid` itself, or under bubblewrap its largest descendant."""
    sizes = {p: procfs.memory(p, "VmSize") or 0 for p in [pid, *procfs.descendants(pid)]}
    best = max(sizes, key=sizes.get)
    return best if sizes[best] else None
