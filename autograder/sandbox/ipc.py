"""System V IPC objects (shared memory, semaphores, message queues) of student code.

Shared memory lives outside a process's address space once detached, so the address-space
rlimit does not count it, and it outlives the process that made it. Where a worker has an IPC
namespace of its own, `limit_namespace` caps what that namespace may hold (and the kernel frees
it all with the namespace); otherwise `remove` deletes the objects a worker left.
"""
from __future__ import annotations

import ctypes
import os

IPC_RMID = 0
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
KINDS = ("shm", "sem", "msg")

_libc = ctypes.CDLL(None, use_errno=True)


def limit_namespace(shm_bytes: int) -> None:
    """Cap the current IPC namespace (fresh, private to one worker): at most `shm_bytes` of
    shared memory in all, few segments, small message queues and semaphore sets. Needs a
    writable /proc/sys (a proc mounted by this mount namespace, as root)."""
    for name, value in (("kernel/shmall", max(1, shm_bytes // PAGE)),
                        ("kernel/shmmni", 256),
                        ("kernel/msgmni", 32),          # x 16 KiB per queue (msgmnb)
                        ("kernel/sem", "250 8000 32 32")):
        with open(f"/proc/sys/{name}", "w") as f:
            f.write(f"{value}\n")


def objects(kind: str) -> list[tuple[int, int, int]]:
    """(id, owner uid, creator uid) of each object of `kind` in this IPC namespace."""
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            header = f.readline().split()
            rows = [line.split() for line in f]
    except OSError:
        return []
    col = {name: i for i, name in enumerate(header)}
    ident = {"shm": "shmid", "sem": "semid", "msg": "msqid"}[kind]
    out = []
    for row in rows:
        try:
            out.append((int(row[col[ident]]), int(row[col["uid"]]), int(row[col["cuid"]])))
        except (KeyError, IndexError, ValueError):
            continue
    return out


def remove(uid: int) -> int:
    """Remove every object owned or created by `uid`; returns how many were removed."""
    removed = 0
    for kind in KINDS:
        for ident, owner, creator in objects(kind):
            if uid in (owner, creator) and _rmid(kind, ident):
                removed += 1
    return removed


def _rmid(kind: str, ident: int) -> bool:
    if kind == "shm":
        ret = _libc.shmctl(ident, IPC_RMID, None)
    elif kind == "sem":
        ret = _libc.semctl(ident, 0, IPC_RMID)
    else:
        ret = _libc.msgctl(ident, IPC_RMID, None)
    return ret == 0
