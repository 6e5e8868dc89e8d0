"""The trusted side of sandboxed execution: start the fork server, run workers, enforce limits.

Isolation levels, strongest first; `auto` picks the strongest this machine allows:

* ``namespaces``: the fork server runs under bubblewrap (no network, a private file system that
  holds only the Python installation and the engine, private PIDs); as root, each worker also
  gets its own PID namespace and an unprivileged user without supplementary groups.
* ``user``: as root without bubblewrap: unprivileged user per worker, own PID namespace.
* ``rlimits``: neither root nor bubblewrap: same user, a child-subreaper kills leftovers.

All levels: rlimits (memory, CPU, processes, file size, open files), a scrubbed environment, a
fresh empty working directory, and time limits enforced from here with SIGKILL.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import procfs, wire
from .errors import SandboxError
from .limits import Limits
from .protocol import decode_outcome

LEVELS = ("namespaces", "user", "rlimits")
LEVEL_DESCRIPTIONS = {
    "namespaces": "namespaces (bubblewrap: no network, private files and PIDs; "
                  "unprivileged user; rlimits)",
    "namespaces-userns": "namespaces (bubblewrap user namespace: no network, private files "
                         "and PIDs; rlimits)",
    "user": "user (unprivileged user, private PIDs, rlimits; no bubblewrap)",
    "rlimits": "rlimits (same user, resource limits only; no root, no bubblewrap)",
}
ENGINE_DIR = Path(__file__).resolve().parent
SANDBOX_ENGINE_ROOT = "/opt/autograder"
BASE_UID = 61000
SCRUBBED_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
                "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


class WorkerStopped(Exception):
    """The worker is gone or was stopped: status is timeout, memory or error."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def protect_this_process(die_with_parent: bool = False) -> None:
    """Make /proc/<grader>/environ, mem and cmdline unreadable to other users' processes; with
    `die_with_parent`, be killed when the process that started this one ends (a grading
    process outliving a killed `autograder grade` would go on writing its results)."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
        if die_with_parent:
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if die_with_parent and os.getppid() == 1:
        os._exit(1)   # the parent was already gone before the signal was asked for


# ------------------------------------------------------------------ levels

def _python_dirs() -> list[str]:
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix,
            os.path.dirname(os.path.realpath(sys.executable))}
    for p in sys.path:
        if "site-packages" in p and os.path.isdir(p):
            dirs.add(p)
    # Keep the outermost folders only.
    out: list[str] = []
    for d in sorted({os.path.realpath(d) for d in dirs} | dirs, key=len):
        if not any(d == o or d.startswith(o + os.sep) for o in out):
            out.append(d)
    return out


def bwrap_command(python: list[str], as_root: bool) -> list[str]:
    cmd = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
           "--unshare-cgroup-try"]
    if not as_root:
        cmd += ["--unshare-user"]
    cmd += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/usr", "/usr"]
    for top in ("bin", "lib", "lib64", "sbin", "lib32"):
        p = Path("/") / top
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            cmd += ["--ro-bind", str(p), str(p)]
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
              "/sys/devices/system/cpu"):
        if os.path.exists(f):
            cmd += ["--ro-bind", f, f]
    made: set[str] = set()
    for d in _python_dirs():
        if d.startswith("/usr/"):
            continue
        # Parents are created traversable, not listable: the worker's user must reach the interpreter
        # even where the host keeps it under a private home directory.
        for parent in reversed(Path(d).parents):
            if str(parent) != "/" and str(parent) not in made:
                made.add(str(parent))
                cmd += ["--perms", "0711", "--dir", str(parent)]
        cmd += ["--ro-bind", d, d]
    cmd += ["--ro-bind", str(ENGINE_DIR), f"{SANDBOX_ENGINE_ROOT}/autograder",
            "--chdir", "/tmp", "--clearenv"]
    for k, v in SCRUBBED_ENV.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--"] + python


def _zygote_python(fd: int, engine_root: str) -> list[str]:
    code = (f"import sys; sys.path.insert(0, {engine_root!r}); "
            f"from autograder.zygote import main; main({fd})")
    return [sys.executable, "-s", "-B", "-c", code]


@functools.lru_cache(maxsize=None)
def bwrap_works(as_root: bool) -> bool:
    if not shutil.which("bwrap"):
        return False
    # Starting the interpreter inside is enough: the fork server's own start imports torch
    # there, and reports any failure to do so.
    probe = bwrap_command([sys.executable, "-s", "-S", "-c", "pass"], as_root)
    try:
        return subprocess.run(probe, capture_output=True, timeout=60, env=SCRUBBED_ENV,
                              stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _world_readable_python() -> bool:
    """An unprivileged user must be able to read the interpreter and its libraries."""
    for d in _python_dirs():
        p = Path(d)
        for part in [p, *p.parents]:
            try:
                if not part.stat().st_mode & 0o005:
                    return False
            except OSError:
                return False
    return True


def choose_level(requested: str = "auto") -> str:
    root = os.geteuid() == 0
    available = []
    if bwrap_works(root):
        available.append("namespaces")
    if root and _world_readable_python():
        available.append("user")
    available.append("rlimits")
    if requested == "auto":
        if available[0] == "rlimits" and root:
            # The worker would run as root: refuse unless the instructor asks for it by name.
            raise SandboxError(
                "no safe sandbox here: running as root without bubblewrap (and without a Python "
                "installation other users can read), student code would run as root. Install "
                "bubblewrap (apt-get install bubblewrap), or pass --sandbox rlimits to accept "
                "that risk for trusted code")
        return available[0]
    if requested not in available:
        raise SandboxError(f"sandbox level {requested!r} is not available here "
                           f"(available: {', '.join(available)})")
    return requested


# ------------------------------------------------------------------ the fork server

class Sandbox:
    """One fork server; workers are created from it one submission at a time."""

    def __init__(self, level: str = "auto", slot: int = 0):
        self.level = choose_level(level)
        self.root = os.geteuid() == 0
        self.uid = BASE_UID + slot if self.root else None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = theirs.fileno()
        if self.level == "namespaces":
            cmd = bwrap_command(_zygote_python(fd, SANDBOX_ENGINE_ROOT), self.root)
        else:
            cmd = _zygote_python(fd, str(ENGINE_DIR.parent))
        # The fork server's own errors go to a file: a pipe nobody reads could fill and block.
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, pass_fds=[fd], env=SCRUBBED_ENV, cwd="/",
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self.errors)
        theirs.close()
        self._buf = b""
        self._next_id = 0
        self._preloaded: set[str] = set()
        self._zygote_pid: int | None = None
        ready = self._read_reply(timeout=120)
        if not ready.get("ready"):
            raise SandboxError("the sandbox's fork server did not start")
        self.pidns = bool(ready.get("pidns"))
        if self.level == "namespaces" and not self.root:
            self.description = LEVEL_DESCRIPTIONS["namespaces-userns"]
        else:
            self.description = LEVEL_DESCRIPTIONS[self.level]

    def _read_reply(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            self.control.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = self.control.recv(65536)
            except socket.timeout:
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

    def spawn(self, limits: Limits) -> tuple[int, socket.socket, int]:
        self._next_id += 1
        wid = self._next_id
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        memory = self._memory_bytes(limits)
        req = {"op": "spawn", "id": wid, "uid": self.uid if self.level != "rlimits" else None,
               "limits": {
                   "memory_bytes": memory,
                   "cpu_seconds": int(limits.submission_seconds * 2 + 30),
                   "file_bytes": limits.file_mb * 2**20,
                   "open_files": limits.open_files,
                   "processes": limits.processes,
                   "output_bytes": limits.output_kb * 1024}}
        socket.send_fds(self.control, [json.dumps(req).encode() + b"\n"], [theirs.fileno()])
        theirs.close()
        reply = self._read_reply(timeout=30)
        if not reply.get("spawned"):
            ours.close()
            raise SandboxError("the fork server could not start a worker")
        return wid, ours, memory

    def preload(self, names: list[str]) -> None:
        """Have the fork server import the modules of these dotted names once (for tripwires:
        each worker then installs them without paying for the import)."""
        todo = [n for n in names if n not in self._preloaded]
        if not todo:
            return
        self.control.sendall(json.dumps({"op": "preload", "names": todo}).encode() + b"\n")
        self._read_reply(timeout=120)
        self._preloaded.update(todo)

    def _memory_bytes(self, limits: Limits) -> int:
        # The worker inherits torch's address space from the fork server: the limit is on top.
        if self._zygote_pid is None:
            self._zygote_pid = _zygote_pid(self.proc.pid)
        size = procfs.memory(self._zygote_pid, "VmSize") if self._zygote_pid else None
        return (size or 2 * 2**30) + limits.memory_mb * 2**20

    def finish(self, wid: int, grace: float = 0.0) -> dict:
        self.control.sendall(json.dumps({"op": "finish", "id": wid, "grace": grace}).encode()
                             + b"\n")
        return self._read_reply(timeout=60)

    def close(self) -> None:
        try:
            self.control.close()
        finally:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.errors.close()


def _zygote_pid(pid: int) -> int | None:
    """The fork server's process: `pid` itself, or under bubblewrap its largest descendant."""
    sizes = {p: procfs.memory(p, "VmSize") or 0 for p in [pid, *procfs.descendants(pid)]}
    best = max(sizes, key=sizes.get)
    return best if sizes[best] else None


# ------------------------------------------------------------------ one submission's worker

@dataclass
class LoadResult:
    ok: bool
    defined: dict
    status: str = "ok"
    error: dict | None = None
    cell_errors: list[dict] = field(default_factory=list)   # notebooks: cells that failed
    answers: dict = field(default_factory=dict)   # answer variables, decoded plain data


class WorkerSession:
    """The worker of one submission: import the student's file once, then serve calls.

    A worker that is killed (time limit) or dies is replaced on the next call, re-importing the
    student's file, so one runaway function costs only its own question.
    """

    def __init__(self, sandbox: Sandbox, source: str, filename: str, module: str,
                 api: list[str], limits: Limits, cells: list[tuple[int, str]] | None = None,
                 answers: list[str] | None = None, tripwires: list[str] | None = None):
        self.sandbox, self.source, self.filename = sandbox, source, filename
        self.cells = cells   # a notebook: code cells run one by one, going on after errors
        self.module, self.api, self.limits = module, api, limits
        self.answers = list(answers or [])       # names of values to report (knowledge checks)
        self.tripwires = list(tripwires or [])   # forbidden functions outside torch
        self.wid: int | None = None
        self.sock: socket.socket | None = None
        self.memory_bytes = 0
        self.started = time.monotonic()
        self.question_deadline = self.started + limits.question_seconds
        self.question_seconds = limits.question_seconds

    # -- deadlines
    def begin_question(self) -> None:
        self.question_deadline = time.monotonic() + self.limits.question_seconds

    def _deadline(self) -> float:
        return min(self.question_deadline, self.started + self.limits.submission_seconds)

    # -- lifecycle
    def load(self) -> LoadResult:
        self.wid, self.sock, self.memory_bytes = self.sandbox.spawn(self.limits)
        self.reader = wire.Reader(self.sock)
        deadline = min(time.monotonic() + self.limits.import_seconds,
                       self.started + self.limits.submission_seconds)
        request = {"op": "load", "filename": self.filename, "module": self.module,
                   "api": self.api, "answers": self.answers, "tripwires": self.tripwires}
        if self.cells is not None:
            request["cells"] = [[n, src] for n, src in self.cells]
        else:
            request["source"] = self.source
        reply, rbuf = self._exchange(request, [], deadline, "importing your file")
        if reply.get("ok"):
            defined = reply.get("defined") if isinstance(reply.get("defined"), dict) else {}
            return LoadResult(True, {str(k)[:80]: v for k, v in list(defined.items())[:64]
                                     if isinstance(v, dict)},
                              cell_errors=_cell_errors(reply.get("cell_errors")),
                              answers=_answers(reply.get("answers"), rbuf, self.answers))
        status = reply.get("status") if reply.get("status") in (
            "error", "memory", "not_implemented") else "error"
        error = decode_outcome({"status": "error", "error": reply.get("error")}, [])["error"]
        return LoadResult(False, {}, status, error)

    def _stop(self, grace: float = 0.0) -> dict:
        info = {}
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.wid is not None:
            info = self.sandbox.finish(self.wid, grace)
            self.wid = None
        return info

    def close(self) -> None:
        self._stop(grace=0.2)

    # -- calls
    def call(self, fn: str, args: tuple, kwargs: dict, *, upstream: Any, want_grad: bool,
             forbidden: list[str]) -> dict:
        if self.sock is None:
            loaded = self.load()
            if not loaded.ok:
                self._stop()
                raise WorkerStopped("error", "your file failed to import again after the "
                                             "previous stop")
        buffers: list[bytes] = []
        header = {"op": "call", "fn": fn, "inputs": wire.encode((tuple(args), dict(kwargs)),
                                                                 buffers),
                  "upstream": wire.encode(upstream, buffers), "want_grad": want_grad,
                  "forbidden": list(forbidden)}
        reply, rbuf = self._exchange(header, buffers, self._deadline(), f"running {fn}")
        try:
            if not reply.get("ok"):
                raise wire.WireError("worker refused the call")
            return decode_outcome(reply.get("outcome"), rbuf)
        except wire.WireError as e:
            self._stop()
            raise WorkerStopped("error", f"{fn} returned something the grader cannot read "
                                         f"({e})") from None

    def _exchange(self, header: dict, buffers: list[bytes], deadline: float,
                  doing: str) -> tuple[dict, list[bytes]]:
        sock = self.sock
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(wire.pack(header, buffers))
            self.reader.deadline = deadline
            return self.reader.message()
        except socket.timeout:
            info = self._stop()
            if info.get("vm_peak", 0) >= 0.9 * self.memory_bytes:
                raise WorkerStopped("memory", f"memory limit: {doing} used all the memory "
                                              f"allowed ({self.limits.memory_mb} MB above the "
                                              "baseline) and then ran out of time") from None
            limit = ("the whole submission" if deadline >= self.started +
                     self.limits.submission_seconds - 1e-6 else "this question")
            seconds = (self.limits.submission_seconds if limit == "the whole submission"
                       else self.limits.question_seconds)
            raise WorkerStopped("timeout", f"time limit: {doing} took longer than the "
                                           f"{seconds:g} s allowed for {limit} (an endless "
                                           "loop?)") from None
        except (EOFError, ConnectionError, OSError, wire.WireError):
            info = self._stop(grace=1.0)
            raise WorkerStopped(*_death(info, doing)) from None


def _answers(value: Any, buffers: list[bytes], names: list[str]) -> dict:
    """Decode the worker's report of the answer variables (untrusted data): only the names
    asked for; a value that does not decode becomes an opaque stand-in."""
    out: dict = {}
    if not isinstance(value, dict):
        return out
    for name in names:
        if name not in value:
            continue
        try:
            out[name] = wire.decode(value[name], buffers)
        except (wire.WireError, TypeError, ValueError, OverflowError):
            out[name] = wire.Opaque("value the grader cannot read")
    return out


def _cell_errors(value: Any) -> list[dict]:
    """Validate the worker's report of failing notebook cells (untrusted data)."""
    out: list[dict] = []
    for item in value[:20] if isinstance(value, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("cell"), int) \
                or isinstance(item.get("cell"), bool):
            continue
        status = item.get("status") if item.get("status") in (
            "error", "memory", "not_implemented") else "error"
        try:
            error = decode_outcome({"status": "error", "error": item.get("error")}, [])["error"]
        except wire.WireError:
            error = None
        syntax = item.get("syntax") if isinstance(item.get("syntax"), dict) else None
        if syntax is not None:
            line = syntax.get("line")
            syntax = {"line": line if isinstance(line, int) and not isinstance(line, bool)
                      else None, "text": str(syntax.get("text", ""))[:200],
                      "msg": str(syntax.get("msg", ""))[:200]}
        out.append({"cell": item["cell"], "status": status, "error": error or {},
                    "syntax": syntax})
    return out


_SIGNALS = {9: "killed", 11: "crashed (segmentation fault; endless recursion?)", 6: "aborted",
            24: "stopped by the CPU time limit", 25: "stopped by the file size limit",
            7: "crashed (bus error)", 8: "crashed (arithmetic error)"}


def _death(info: dict, doing: str) -> tuple[str, str]:
    if "exit" in info:
        return "error", (f"your code ended the process (exit code {info['exit']}) while "
                         f"{doing}; do not call sys.exit, os._exit or similar")
    sig = info.get("signal")
    if sig == 9:
        return "memory", f"the process was killed while {doing} (out of memory?)"
    if sig == 24:
        return "timeout", f"the CPU time limit stopped {doing}"
    if sig is None:
        return "error", f"the process stopped unexpectedly while {doing}"
    what = _SIGNALS.get(sig, f"ended by signal {sig}")
    return "error", f"the process {what} while {doing}"
