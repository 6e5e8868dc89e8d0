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
from pathlib import Path

from . import procfs
from .errors import SandboxError
from .limits import Limits

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


def _zygote_python(fd: int, engine_root: str, pid_namespaces: bool) -> list[str]:
    code = (f"import sys; sys.path.insert(0, {engine_root!r}); "
            f"from autograder.zygote import main; main({fd}, {pid_namespaces!r})")
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

    def __init__(self, level: str = "auto", slot: int = 0, wait: bool = True,
                 pid_namespaces: bool = True):
        """`pid_namespaces=False` keeps workers out of PID namespaces of their own even where
        they are possible (the fork server then kills what they leave as a subreaper)."""
        self.level = choose_level(level)
        self.root = os.geteuid() == 0
        self.uid = BASE_UID + slot if self.root else None
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = theirs.fileno()
        if self.level == "namespaces":
            cmd = bwrap_command(_zygote_python(fd, SANDBOX_ENGINE_ROOT, pid_namespaces),
                                self.root)
        else:
            cmd = _zygote_python(fd, str(ENGINE_DIR.parent), pid_namespaces)
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
        self._ready = False
        self._unanswered = 0     # finish requests whose answers nobody waits for
        if self.level == "namespaces" and not self.root:
            self.description = LEVEL_DESCRIPTIONS["namespaces-userns"]
        else:
            self.description = LEVEL_DESCRIPTIONS[self.level]
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
        self._ready = True

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
        self.wait_ready()
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
        reply = self._reply(timeout=30)
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
        self.wait_ready()
        self.control.sendall(json.dumps({"op": "preload", "names": todo}).encode() + b"\n")
        self._reply(timeout=120)
        self._preloaded.update(todo)

    def _memory_bytes(self, limits: Limits) -> int:
        # The worker inherits torch's address space from the fork server: the limit is on top.
        if self._zygote_pid is None:
            self._zygote_pid = _zygote_pid(self.proc.pid)
        size = procfs.memory(self._zygote_pid, "VmSize") if self._zygote_pid else None
        return (size or 2 * 2**30) + limits.memory_mb * 2**20

    def finish(self, wid: int, grace: float = 0.0, wait: bool = True) -> dict:
        """Stop a worker; with `wait`, return how it ended (exit code or signal, peak memory).
        Without, the fork server's answer is read (and dropped) before the next one."""
        self.control.sendall(json.dumps({"op": "finish", "id": wid, "grace": grace}).encode()
                             + b"\n")
        if not wait:
            self._unanswered += 1
            return {}
        return self._reply(timeout=60)

    def _reply(self, timeout: float) -> dict:
        self._drain()
        return self._read_reply(timeout)

    def _drain(self) -> None:
        """Read (and drop) the answers to finish requests nobody waited for."""
        while self._unanswered:
            self._read_reply(timeout=60)
            self._unanswered -= 1

    def close(self) -> None:
        try:
            self._drain()   # let the last workers' ends be answered first
        except (SandboxError, OSError, ValueError):
            pass
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
