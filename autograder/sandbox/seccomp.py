"""The worker's seccomp filter: no second process, below Python.

The audit hook refuses every Python way to start a process (`audit.py`), but native code runs
below it: a library's C code, or a student's call that slips past an audit event. This filter,
installed in each worker after its fork and before any student code, makes the kernel itself
refuse, for that process and every thread it starts:

* a new process: `fork`, `vfork`, and `clone` without `CLONE_THREAD` (what `fork()`,
  `posix_spawn` and `subprocess` use); threads (`clone` with `CLONE_THREAD`) work as before,
  torch's included. `clone3` passes its flags in memory a filter cannot read: it gets ENOSYS,
  and the C library falls back to `clone`, which the filter can judge;
* running another program: `execve`, `execveat`;
* reaching into another process: `ptrace`, `process_vm_readv`, `process_vm_writev`;
* system calls of another architecture's table (the x32 and 32-bit ABIs), which would
  bypass the numbers above.

A refused call kills the worker with SIGSYS, which the fork server reads as hard evidence
(`evidence.read_end`). The filter is a small classic-BPF program handed to `prctl`, written here
rather than built with libseccomp: a dozen instructions for two architectures, no shared
library that a container may lack, and nothing to translate at run time. Elsewhere (another
architecture, a kernel without seccomp) the worker runs without it, and the sandbox level says
so (`available`).
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
ENOSYS = 38
CLONE_THREAD = 0x00010000
# Offsets in `struct seccomp_data`: the call's number, the architecture, the first argument's
# low 32 bits (little-endian).
NR, ARCH, ARG0 = 0, 4, 16
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06

# Per machine: the audit architecture, the call numbers, and where another ABI's numbers start.
_TABLES = {
    "x86_64": (0xC000003E, {"clone": 56, "fork": 57, "vfork": 58, "execve": 59,
                            "execveat": 322, "clone3": 435, "ptrace": 101,
                            "process_vm_readv": 310, "process_vm_writev": 311}, 0x40000000),
    "aarch64": (0xC00000B7, {"clone": 220, "execve": 221, "execveat": 281, "clone3": 435,
                             "ptrace": 117, "process_vm_readv": 270,
                             "process_vm_writev": 271}, None),
}
_KILLED = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv",
           "process_vm_writev")


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine (`struct sock_filter` entries), or None where unknown."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    arch, calls, other_abi = table
    # (code, jump-if-true label, jump-if-false label, k); labels are resolved below.
    code: list[tuple[int, str | int, str | int, int]] = [
        (LD_W_ABS, 0, 0, ARCH), (JEQ_K, 0, "kill", arch), (LD_W_ABS, 0, 0, NR)]
    if other_abi is not None:
        code.append((JGE_K, "kill", 0, other_abi))
    code.append((JEQ_K, "nosys", 0, calls["clone3"]))
    code += [(JEQ_K, "kill", 0, calls[name]) for name in _KILLED if name in calls]
    code += [(JEQ_K, 0, "allow", calls["clone"]),
             (LD_W_ABS, 0, 0, ARG0), (JSET_K, "allow", "kill", CLONE_THREAD)]
    labels = {"allow": len(code), "kill": len(code) + 1, "nosys": len(code) + 2}
    code += [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_KILL_PROCESS),
             (RET_K, 0, 0, RET_ERRNO | ENOSYS)]

    def jump(at: int, to: str | int) -> int:
        return to if isinstance(to, int) else labels[to] - at - 1

    return b"".join(struct.pack("HBBI", op, jump(i, jt), jump(i, jf), k)
                    for i, (op, jt, jf, k) in enumerate(code))


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> bool:
    """Install the filter on this process (and the threads it starts later); False where this
    machine cannot. Needs `PR_SET_NO_NEW_PRIVS` (or root) first."""
    prog = program()
    if prog is None:
        return False
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0


def available() -> bool:
    """Whether workers here get the filter: tried in a child, which must survive starting a
    thread and be killed (SIGSYS) when it forks."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            libc = ctypes.CDLL(None)
            libc.prctl(38, 1, 0, 0, 0)        # PR_SET_NO_NEW_PRIVS
            if install():
                import threading

                t = threading.Thread(target=lambda: None)
                t.start()
                t.join()
                os.fork()                     # must not return
                code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == 31


__all__ = ["available", "install", "program"]
