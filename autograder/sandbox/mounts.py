"""The file system a worker sees, made with mount(2) in mount namespaces of its own (root only).

* `scratch`: one size-capped tmpfs holds everything a worker may write (its working directory,
  /tmp, /var/tmp, /dev/shm), so files and POSIX shared memory count against one cap, and all of
  it disappears with the worker's mount namespace.
* `build_root`: where no bubblewrap makes the sandbox's file system (the `user` level), the
  fork server makes the same one itself (`levels.file_view`: system libraries, the Python
  installation, the sandbox package) and enters it, so the project's reference, hidden cases,
  snapshots and mistakes catalogue, and everything else on the machine, are out of reach.
"""
from __future__ import annotations

import ctypes
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    enc = (lambda s: None if s is None else s.encode())
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def make_private() -> None:
    """Stop mounts made here from reaching the namespace this one was copied from."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)


def fresh_proc() -> None:
    """A proc of this process's PID namespace (and writable /proc/sys for its IPC namespace)."""
    fresh_proc_at("/proc")


SCRATCH_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def scratch(workdir: str, size_bytes: int, uid: int | None, keep: list[str] = ()) -> None:
    """One tmpfs of `size_bytes` behind /tmp, /var/tmp, /dev/shm and the working directory
    (`workdir`, a path under /tmp, made again inside it, private to `uid`). The folders of
    `keep` that lie under those (a Python installation in /tmp, say: the worker may still
    import or start it) are bound read-only into the new tmpfs at their paths."""
    flags = MS_NOSUID | MS_NODEV
    # Held open (O_PATH) before the tmpfs covers them, bound back from /proc/self/fd after.
    kept = [(d, os.open(d, os.O_PATH | os.O_CLOEXEC)) for d in keep
            if os.path.isdir(d) and any(d == t or d.startswith(t + "/") for t in SCRATCH_DIRS)]
    mount("tmpfs", "/tmp", "tmpfs", flags, f"size={max(size_bytes, 1 << 20)},mode=0755")
    for sub in ("tmp", "shm"):
        os.mkdir(f"/tmp/{sub}", 0o1777)
        os.chmod(f"/tmp/{sub}", 0o1777)   # mkdir's mode passes through the umask
    for target in ("/dev/shm", "/var/tmp"):
        if os.path.isdir(target):
            mount("/tmp/shm" if target == "/dev/shm" else "/tmp/tmp", target, None,
                  MS_BIND | flags)
    # /tmp itself shows the `tmp` folder of the same file system: one size cap for all four.
    mount("/tmp/tmp", "/tmp", None, MS_BIND | flags)
    for path, fd in kept:
        try:
            _bind(f"/proc/self/fd/{fd}", path, read_only=True)
        finally:
            os.close(fd)
    os.mkdir(workdir, 0o700)
    if uid is not None:
        os.chown(workdir, uid, uid)


def build_root(root: str, view: list) -> None:
    """Make the file system of `view` (see `levels.file_view`) on a tmpfs at `root`, an empty
    folder, and enter it (chroot): from then on this process and its children see only that.
    What bubblewrap does at the `namespaces` level, done by the fork server at `user`."""
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755")
    for kind, *args in view:
        target = root + args[-1] if kind in ("ro-bind", "symlink") else root + args[0]
        if kind == "tmpfs":
            _mkdirs(target)
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        elif kind == "proc":
            _mkdirs(target)
            fresh_proc_at(target)
        elif kind == "dev":
            _dev(target)
        elif kind == "dir":
            _mkdirs(target)
            os.chmod(target, args[1])
        elif kind == "symlink":
            _mkdirs(os.path.dirname(target))
            os.symlink(args[0], target)
        elif kind == "ro-bind":
            _bind(args[0], target, read_only=True)
    os.chdir(root)
    os.chroot(".")
    os.chdir("/")


def fresh_proc_at(target: str) -> None:
    mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _mkdirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def _bind(source: str, target: str, read_only: bool) -> None:
    if os.path.isdir(source):
        _mkdirs(target)
    else:
        _mkdirs(os.path.dirname(target))
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _dev(target: str) -> None:
    """A minimal /dev, as bubblewrap's: the harmless character devices and the usual links."""
    _mkdirs(target)
    mount("tmpfs", target, "tmpfs", MS_NOSUID, "size=64k,mode=0755")
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        if os.path.exists(f"/dev/{name}"):
            _bind(f"/dev/{name}", f"{target}/{name}", read_only=False)
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                       ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(link, f"{target}/{name}")
    os.mkdir(f"{target}/shm", 0o755)
