"""The file system a worker sees, made with mount(2) in mount namespaces of its own (root only).

* `scratch`: one size-capped tmpfs holds everything a worker may write (its working directory,
  /tmp, /var/tmp, /dev/shm), so files and POSIX shared memory count against one cap, and all of
  it disappears with the worker's mount namespace.
* `mask`: where the fork server runs on the host's file system (the `user` level), the project's
  own folders (reference, assignments with hidden cases, snapshots, the mistakes catalogue) are
  covered by empty mounts, keeping only what a worker needs (the Python installation and the
  sandbox package).
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

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
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def scratch(workdir: str, size_bytes: int, uid: int | None) -> None:
    """One tmpfs of `size_bytes` behind /tmp, /var/tmp, /dev/shm and the working directory
    (`workdir`, a path under /tmp, made again inside it, private to `uid`)."""
    flags = MS_NOSUID | MS_NODEV
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
    os.mkdir(workdir, 0o700)
    if uid is not None:
        os.chown(workdir, uid, uid)


def mask(hidden: list[str], keep: list[str]) -> list[str]:
    """Cover each path of `hidden` with an empty mount (a read-only tmpfs for a folder,
    /dev/null for a file), except the paths of `keep` and the folders leading to them, which
    stay as they are. Returns the paths covered."""
    keep_paths = [Path(os.path.realpath(k)) for k in keep]
    covered: list[str] = []

    def visit(path: Path) -> None:
        if path.is_symlink() or not path.exists():
            return
        if any(path == k or k in path.parents for k in keep_paths):
            return   # kept, or inside something kept
        if not any(path in k.parents for k in keep_paths):
            _cover(path)
            covered.append(str(path))
            return
        for child in sorted(path.iterdir()):
            visit(child)

    for h in hidden:
        visit(Path(os.path.realpath(h)))
    return covered


def _cover(path: Path) -> None:
    if path.is_dir():
        mount("tmpfs", str(path), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0755")
        mount(None, str(path), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    else:
        mount("/dev/null", str(path), None, MS_BIND)
        mount(None, str(path), None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def private_tmp() -> None:
    """Empty /tmp, /var/tmp and /dev/shm for this mount namespace (the host's stay unseen)."""
    for target in ("/tmp", "/var/tmp", "/dev/shm"):
        if os.path.isdir(target) and not os.path.islink(target):
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
