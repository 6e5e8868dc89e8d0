"""Isolation levels: which one this machine allows, and the bubblewrap command for the strongest.

Levels, strongest first; `auto` picks the strongest this machine allows:

* ``namespaces``: the fork server runs under bubblewrap (no network, a private file system that
  holds only the Python installation and this package, private PIDs); as root, each worker also
  gets its own PID namespace and an unprivileged user without supplementary groups.
* ``user``: as root without bubblewrap: the fork server makes the same private file system and
  drops the network itself; unprivileged user per worker, own PID namespace.
* ``rlimits``: neither root nor bubblewrap: same user, a child-subreaper kills leftovers.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from .errors import SandboxError

LEVELS = ("namespaces", "user", "rlimits")
LEVEL_DESCRIPTIONS = {
    "namespaces": "namespaces (bubblewrap: no network, private files and PIDs; "
                  "unprivileged user; rlimits)",
    "namespaces-userns": "namespaces (bubblewrap user namespace: no network, private files "
                         "and PIDs; rlimits)",
    "user": "user (no bubblewrap: no network, private files made by the fork server, private "
            "PIDs; unprivileged user; rlimits)",
    "rlimits": "rlimits (same user, resource limits only; no root, no bubblewrap)",
}
PACKAGE_DIR = Path(__file__).resolve().parent     # autograder/sandbox
# Inside bubblewrap the fork server sees only this package (and the empty top-level
# `autograder/__init__.py` that makes it importable), under this root.
SANDBOX_ENGINE_ROOT = "/opt/autograder"
BASE_UID = 61000
SHARED_TMP_BYTES = 1 << 30
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

def python_dirs() -> list[str]:
    """The Python installation's folders, outermost only: what every worker must see."""
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


def file_view(engine_root: str) -> list[tuple]:
    """The file system the fork server and its workers see, as (kind, *arguments) entries:
    ("tmpfs", path), ("proc", path), ("dev", path), ("ro-bind", source, target),
    ("symlink", target, path), ("dir", path, mode). Only the system's libraries, the Python
    installation and the engine's sandbox package (under `engine_root`) are in it. Bubblewrap
    makes it at the `namespaces` level (`bwrap_command`), the fork server itself at `user`
    (`mounts.build_root`)."""
    view: list[tuple] = [("tmpfs", "/tmp"), ("proc", "/proc"), ("dev", "/dev"),
                         ("ro-bind", "/usr", "/usr")]
    for top in ("bin", "lib", "lib64", "sbin", "lib32"):
        p = Path("/") / top
        if p.is_symlink():
            view.append(("symlink", os.readlink(p), str(p)))
        elif p.is_dir():
            view.append(("ro-bind", str(p), str(p)))
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
              "/sys/devices/system/cpu"):
        if os.path.exists(f):
            view.append(("ro-bind", f, f))
    made: set[str] = set()
    engine = Path(engine_root) / "autograder"
    for d in [*(d for d in python_dirs() if not d.startswith("/usr/")), str(engine)]:
        # Parents are created traversable, not listable: the worker's user must reach the
        # interpreter even where the host keeps it under a private home directory.
        for parent in reversed(Path(d).parents):
            if str(parent) != "/" and str(parent) not in made:
                made.add(str(parent))
                view.append(("dir", str(parent), 0o711))
        if d != str(engine):
            view.append(("ro-bind", d, d))
    top = PACKAGE_DIR.parent
    view += [("dir", str(engine), 0o711),
             ("ro-bind", str(top / "__init__.py"), str(engine / "__init__.py")),
             ("ro-bind", str(PACKAGE_DIR), str(engine / "sandbox"))]
    return view


def bwrap_command(python: list[str], as_root: bool) -> list[str]:
    cmd = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
           "--unshare-cgroup-try"]
    if not as_root:
        cmd += ["--unshare-user"]
    for kind, *args in file_view(SANDBOX_ENGINE_ROOT):
        if kind == "tmpfs" and _bwrap_has_size():
            # /tmp holds the workers' folders: capped, in case workers cannot have their own.
            cmd += ["--size", str(SHARED_TMP_BYTES)]
        if kind == "dir":
            cmd += ["--perms", f"{args[1]:04o}", "--dir", args[0]]
        else:
            cmd += [f"--{kind}", *args]
    cmd += ["--chdir", "/tmp", "--clearenv"]
    for k, v in SCRUBBED_ENV.items():
        cmd += ["--setenv", k, v]
    return cmd + ["--"] + python


def forkserver_command(fd: int, engine_root: str, pid_namespaces: bool,
                       view: list | None = None, stage: str | None = None,
                       owns_tmp: bool = False, worker_namespaces: bool = True) -> list[str]:
    """The interpreter command of the fork server, the engine's root put first on its path;
    the other arguments as `forkserver.ForkServer` takes them."""
    code = (f"import sys; sys.path.insert(0, {engine_root!r}); "
            f"from autograder.sandbox.forkserver import main; "
            f"main({fd}, {pid_namespaces!r}, {view!r}, {stage!r}, {owns_tmp!r}, "
            f"{worker_namespaces!r})")
    return [sys.executable, "-s", "-B", "-c", code]


def project_root() -> Path:
    """The folder holding the engine package (a checkout, or Gradescope's source folder)."""
    return PACKAGE_DIR.parent.parent


@functools.lru_cache(maxsize=None)
def _bwrap_has_size() -> bool:
    """`--size` (a capped tmpfs) came with bubblewrap 0.8; older ones refuse the option."""
    try:
        r = subprocess.run([shutil.which("bwrap") or "bwrap", "--help"], capture_output=True,
                           text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in r.stdout + r.stderr


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
    """An unprivileged user must be able to read the interpreter and its libraries (the folders
    above them are made traversable in the sandbox's own file system, `file_view`)."""
    for d in python_dirs():
        try:
            if Path(d).stat().st_mode & 0o005 != 0o005:
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


