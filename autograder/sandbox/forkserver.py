"""The fork server: a process that has imported torch once and forks one worker per submission.

It runs inside the sandbox (bubblewrap when available), holds nothing secret (no reference, no
hidden cases, no grades, a scrubbed environment) and never runs student code itself. Each worker
gets its own PID namespace when this process may make one (so killing the worker kills
everything it started, `setsid()` daemons included); otherwise this process is a child
subreaper and kills every orphan a worker leaves. As root, each worker also gets mount and IPC
namespaces of its own: one size-capped tmpfs for everything it may write, capped System V IPC,
both gone with the worker. Without them, the IPC objects and files a worker's user left are
removed after it. The worker then gets a fresh empty directory, resource limits and, when
started as root, an unprivileged user with no supplementary groups, before any student code
runs.

Without bubblewrap (the `user` level), the fork server first makes the file system bubblewrap
would have made, in a mount namespace of its own (`mounts.build_root`): only the system's
libraries, the Python installation and this package. Workers inherit that view.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
import time

from . import armed, ipc, levels, mounts, procfs, seccomp
from .evidence import UNARMED, UNARMED_EXIT
from .limits import MSGQUEUE_BYTES

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38

_libc = ctypes.CDLL(None, use_errno=True)
# What a worker's scratch tmpfs must not hide where it lies under /tmp (a checkout or venv
# there): the Python installation, and the folder the engine is imported from.
_KEEP = [*levels.python_dirs(),
         os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _own_pid_namespace() -> int | None:
    """An open handle on this process's PID namespace if workers can get namespaces of their
    own: this process may make a new PID namespace for its next child and then return to its
    own, and a child may make a mount namespace (for a private /proc). None otherwise."""
    if os.geteuid() != 0:
        return None
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _libc.unshare(CLONE_NEWPID | CLONE_NEWNS) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return None
    fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    if _libc.unshare(CLONE_NEWPID) != 0 or _libc.setns(fd, CLONE_NEWPID) != 0:
        os.close(fd)
        return None
    return fd


def _probe_private() -> dict:
    """Which per-worker mechanisms work here: mount and IPC namespaces (root only), a capped
    IPC namespace (a writable /proc/sys in it) and a size-capped tmpfs. Tried in a child."""
    if os.geteuid() != 0:
        return {"private": False, "ipc_limits": False, "scratch": False}
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            # Exactly the worker's steps (`_become_worker`), in namespaces of this child's own.
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
            mounts.make_private()
            mounts.fresh_proc()
            code |= 1
            try:
                ipc.limit_namespace(1 << 20)
                code |= 2
            except OSError:
                pass
            mounts.scratch("/tmp/probe", 1 << 20, None)
            code |= 4
        except OSError:
            pass
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 0
    return {"private": bool(code & 1), "ipc_limits": code & 3 == 3, "scratch": code & 5 == 5}


def _set_limits(limits: dict, nproc: int) -> None:
    mem = int(limits["memory_bytes"])
    for res, value in (
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_CPU, int(limits["cpu_seconds"])),
        (resource.RLIMIT_FSIZE, int(limits["file_bytes"])),
        (resource.RLIMIT_NOFILE, int(limits["open_files"])),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_MSGQUEUE, MSGQUEUE_BYTES),
    ):
        try:
            resource.setrlimit(res, (value, value))
        except (ValueError, OSError):
            pass


def _tasks_of(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass
    return count


def _become_worker(sock_fd: int, workdir: str, uid: int | None, limits: dict,
                   own_pidns: bool, private: dict, forbidden: tuple[str, ...] = (),
                   audit_hook: bool = True, process_filter: bool = False,
                   plans: list | None = None) -> None:
    """In the worker: enter the sandbox for good, refuse `forbidden` (the fork request's word,
    read before the student's source exists), then serve the student's calls."""
    if private["private"]:
        # Its own mount and IPC namespaces: a private /proc (with its own PID namespace it sees
        # only its own processes), capped shared memory, one capped tmpfs for all it writes.
        mounts.make_private()
        mounts.fresh_proc()
        if private["ipc_limits"]:
            ipc.limit_namespace(int(limits["shm_bytes"]))
        if private["scratch"]:
            mounts.scratch(workdir, int(limits["scratch_bytes"]), uid, keep=_KEEP)
    os.setsid()
    os.chdir(workdir)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, sock_fd)
    os.closerange(sock_fd + 1, 65536)
    try:
        # The first the kernel kills when the sandbox's memory cgroup runs out (the fork
        # server is spared: `client.Sandbox`); written while /proc/self is still ours.
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        nproc = int(limits["processes"])
    else:
        nproc = _tasks_of(os.getuid()) + int(limits["processes"])
    _set_limits(limits, nproc)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # No second process from here on, whatever runs (`seccomp.py`); where this machine gave the
    # filter to a test child, a worker that cannot have it does not run (fail closed).
    if process_filter and not seccomp.install():
        os._exit(UNARMED_EXIT + UNARMED.index(
            "the seccomp filter refusing a second process could not be installed"))
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir,
                       "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1"})
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    # Drop the grader's import path, keep the interpreter's own.
    sys.path[:] = [p for p in sys.path if p.startswith(sys.base_prefix) or p.startswith(sys.prefix)
                   or "site-packages" in p]
    from .worker import main_from_fd

    main_from_fd(sock_fd, int(limits["output_bytes"]), forbidden, audit_hook, plans)


def _kill_uid(uid: int) -> None:
    """Kill every process of the worker's user (as that user: kill(-1) reaches exactly those)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(20):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
                time.sleep(0.005)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _scratch_full(pid: int) -> bool:
    """Whether a live worker's capped tmpfs is (nearly) full: a worker stopped by the time limit
    with it full was out of memory, not merely slow."""
    try:
        st = os.statvfs(f"/proc/{pid}/root/tmp")
    except OSError:
        return False
    return st.f_blocks > 0 and st.f_bavail <= 0.1 * st.f_blocks


def _remove_files_of(uid: int, keep: set[str]) -> None:
    """Remove what `uid` left at the top of the shared temporary folders."""
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid or e.path in keep:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
            except OSError:
                pass


class ForkServer:
    def __init__(self, control: socket.socket, pid_namespaces: bool = True,
                 view: list | None = None, stage: str | None = None, owns_tmp: bool = False,
                 worker_namespaces: bool = True):
        """`view`: make this file system (`levels.file_view`) at `stage`, an empty folder, and
        enter it, in a mount namespace of this process's own (the `user` level); `owns_tmp`:
        /tmp and the IPC namespace are this process's alone (as under bubblewrap), so whatever
        a worker leaves there can go."""
        self.control = control
        self.own_root = bool(view)
        if view:
            # No network either (a fresh network namespace has only a loopback, down), and IPC
            # apart from the host's even where workers cannot have their own.
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
            mounts.make_private()
            mounts.build_root(stage, view)
            owns_tmp = True
        self.owns_tmp = owns_tmp
        self.private = _probe_private() if worker_namespaces else \
            {"private": False, "ipc_limits": False, "scratch": False}
        self.own_pidns = _own_pid_namespace() if pid_namespaces else None
        self.process_filter = seccomp.available()
        self.use_pidns = self.own_pidns is not None
        if not self.use_pidns:
            # Orphans of a worker become this process's children, to be killed at its finish.
            _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.workers: dict[int, dict] = {}

    def reply(self, msg: dict) -> None:
        self.control.sendall(json.dumps(msg).encode() + b"\n")

    def spawn(self, req: dict, fd: int) -> None:
        """Fork the worker: one fork of this large process, the costly part of a worker's start.
        With PID namespaces the worker is the init of a new one (made just for this fork, then
        this process's own is taken back), so when it dies the kernel kills all it started."""
        uid, limits = req.get("uid"), req["limits"]
        workdir = tempfile.mkdtemp(prefix="submission-")
        if uid is not None:
            os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
        if self.use_pidns:
            _check(_libc.unshare(CLONE_NEWPID), "unshare")
        pid = -1
        try:
            pid = os.fork()
        finally:
            if self.use_pidns and pid != 0:
                _check(_libc.setns(self.own_pidns, CLONE_NEWPID), "setns")
        if pid == 0:
            try:
                self.control.close()
                if self.private["private"]:
                    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
                _become_worker(fd, workdir, uid, limits, self.use_pidns, self.private,
                               tuple(str(n) for n in req.get("forbidden", [])),
                               req.get("audit", True) is not False, self.process_filter,
                               [p if isinstance(p, dict) else {} for p in
                                req.get("plans", [])][:len(req.get("forbidden", []))])
            finally:
                os._exit(70)
        os.close(fd)
        self.workers[req["id"]] = {"pid": pid, "uid": uid, "workdir": workdir}
        self.reply({"id": req["id"], "spawned": True})

    def finish(self, req: dict) -> None:
        """Stop a worker (after a grace period) and report how it ended."""
        w = self.workers.pop(req["id"], None)
        if w is None:
            self.reply({"id": req["id"], "unknown": True})
            return
        pid, status = w["pid"], None
        deadline = time.monotonic() + float(req.get("grace", 0))
        while True:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
                break
            if time.monotonic() >= deadline:
                break
            time.sleep(0.002)
        info: dict = {}
        if status is None:
            peak = procfs.memory(pid, "VmPeak")
            if peak:
                info["vm_peak"] = peak
            if self.private["scratch"] and _scratch_full(pid):
                info["scratch_full"] = True
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
        # With its own PID namespace, the worker was that namespace's init: when it died the
        # kernel killed everything left inside.
        if not self.use_pidns:
            self._kill_orphans()
            if w["uid"] is not None:
                _kill_uid(w["uid"])
        if not self.private["private"]:
            self._remove_leftovers(w)
        shutil.rmtree(w["workdir"], ignore_errors=True)
        info.update({"exit": os.WEXITSTATUS(status)} if os.WIFEXITED(status) else
                    {"signal": os.WTERMSIG(status)})
        self.reply({"id": req["id"], **info})

    def _remove_leftovers(self, w: dict) -> None:
        """Without namespaces of its own, a worker's IPC objects and files outlive it: remove
        those of its user (of this process's own user only where /tmp and IPC are private to
        this process; at `rlimits` on the host nothing can be told apart, and nothing goes)."""
        uid = w["uid"] if w["uid"] is not None else (os.geteuid() if self.owns_tmp else None)
        if uid is None:
            return
        ipc.remove(uid)
        live = {other["workdir"] for other in self.workers.values()}
        _remove_files_of(uid, live)

    def mechanisms(self) -> dict:
        return {"pidns": self.use_pidns, "ipcns": self.private["private"],
                "seccomp": self.process_filter,
                "ipc_limits": self.private["ipc_limits"], "scratch": self.private["scratch"],
                "own_root": self.own_root, "cleanup": not self.private["private"] and (
                    self.owns_tmp or os.geteuid() == 0)}

    def _kill_orphans(self) -> None:
        """As a subreaper: kill and reap every child that is not a running worker."""
        keep = {w["pid"] for w in self.workers.values()}
        for _ in range(200):
            orphans = [p for p in procfs.children(os.getpid()) if p not in keep]
            if not orphans:
                return
            for pid in orphans:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for pid in orphans:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass

    def armed(self, req: dict) -> None:
        """Whether a worker's refusals hold, read from outside it (`armed.py`)."""
        w = self.workers.get(req["id"])
        self.reply({"id": req["id"], "armed": w is not None and armed.armed_pid(w["pid"])})

    def preload(self, req: dict) -> None:
        """Import the modules of some dotted names (library code only, never student code) and
        look up what refusing them and some operators takes (`guard.prepare`), so that workers
        forked later share it."""
        from .evidence import exit_code
        from .execute import STOP_CODES, tripwire_module
        from .guard import arming_key, drop_ahead, prebuild, prepare, register_ahead
        from .routines import Plan
        import gc

        # As at the start: no collection while modules are imported (torch._dynamo, for a file
        # that checkpoints, is about 120,000 objects), and what they left is frozen as it is.
        gc.disable()
        try:
            # What is imported and looked up below must meet torch's own kernels.
            ahead = drop_ahead()
            names = [str(n) for n in req.get("names", [])[:256]]
            loaded = [tripwire_module(n) for n in names]
            prepare([str(o) for o in req.get("ops", [])[:512]], names)
            arming = req.get("arming")
            if isinstance(arming, dict):
                # What a submission's first worker refuses: built once here, and registered
                # here, dormant, for every fork.
                first = [str(n) for n in arming.get("names", [])]
                plans = [Plan.from_json(p) for p in arming.get("plans", [])]
                prebuild(first, plans, os._exit, exit_code, STOP_CODES)
                ahead = arming_key(first, plans)
            if ahead is not None:
                register_ahead(ahead)
            from .worker import engine_classes

            engine_classes()      # any engine module imported by now
            gc.freeze()
        finally:
            gc.enable()
        self.reply({"preloaded": [m for m in loaded if m]})

    def serve(self) -> None:
        buf = b""
        self.reply({"ready": True, "euid": os.geteuid(), **self.mechanisms()})
        while True:
            msg, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
            if not msg:
                break
            buf += msg
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                if req["op"] == "spawn":
                    self.spawn(req, fds.pop(0))
                elif req["op"] == "finish":
                    self.finish(req)
                elif req["op"] == "preload":
                    self.preload(req)
                elif req["op"] == "armed":
                    self.armed(req)
        for w in self.workers.values():
            if w["pid"]:
                try:
                    os.kill(w["pid"], signal.SIGKILL)
                except ProcessLookupError:
                    pass


def main(control_fd: int, pid_namespaces: bool = True, view: list | None = None,
         stage: str | None = None, owns_tmp: bool = False, worker_namespaces: bool = True) -> None:
    import gc

    # No collection while torch and the engine are imported (they make no garbage worth a
    # pass, and the passes cost about a sixth of the import's CPU), nor at the end: the heap is
    # frozen with the little garbage the imports left (about 7,000 objects, no page of memory
    # given back by collecting them; the pass cost 0.1 s of each fork server's start).
    gc.disable()
    import torch

    torch.set_num_threads(1)
    # Warm up the code paths every worker uses, so forks share them instead of redoing them.
    from . import execute, protocol, wire, worker  # noqa: F401
    # What each worker's guard and audit hook read before the student's code runs: imported
    # and computed here once, shared by every fork.
    import collections, enum, logging, sysconfig, traceback, typing  # noqa: E401,F401
    import concurrent.futures, multiprocessing, _posixsubprocess  # noqa: E401,F401

    from . import guard
    from .guard import prepare
    from .library_routines import preload
    from .observe import library_dirs

    # torch's modules of Python implementations of operators (`torch._refs`, `torch._decomp`),
    # the grader's operator for Python-level refusals and the refusing code: looked up once
    # here, so that arming a worker only registers and swaps (each assignment's operators and
    # targets come with its first submission: `preload`).
    preload()
    prepare()
    guard.isolated(worker.REFUSE_PROCESS, {}, "fork_exec")
    worker.engine_classes()
    sysconfig.get_paths()
    library_dirs()

    # Warm up what every worker's first call needs, so that forks share it instead of each
    # paying for it: a forward and backward pass under a refusal of an operator it never
    # reaches, and the error path.

    def warm(t):
        w = (t @ t.transpose(-2, -1)).masked_fill(torch.zeros(2, 2, dtype=torch.bool), -1e9)
        e = (w - w.amax(-1, keepdim=True)).exp()
        return (e / e.sum(-1, keepdim=True)) @ t, w

    x = torch.randn(2, 3)
    from .routines import Plan

    outcome = execute.run_call(warm, (x,), {}, upstream=(torch.ones(2, 3), torch.ones(2, 2)),
                               want_grad=True, forbidden=["aten::cumsum"],
                               plans=[Plan(ops=["cumsum"])])
    protocol.encode_outcome(outcome, [])
    execute.run_call(lambda t: t.numpy(), (x,), {}, want_grad=True)  # the error path
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # Move every object so far out of the collector's reach: a collection in a worker would
    # otherwise write to (and so copy) every page of the shared, already imported heap.
    gc.freeze()
    gc.enable()
    ForkServer(socket.socket(fileno=control_fd), pid_namespaces, view, stage, owns_tmp,
               worker_namespaces).serve()


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("python -m autograder.sandbox.forkserver: the grader starts this with the file "
                 "descriptor of its control socket (FD); it is not run by hand")
    main(int(sys.argv[1]))
    # Every worker was killed and nothing is left that anyone reads: the interpreter's own
    # teardown of torch's modules would cost about half a second of CPU, for nothing.
    sys.stderr.flush()
    os._exit(0)
