"""Reading /proc: parent links and memory figures of processes (Linux only).

Shared by the fork server (killing orphans, telling a memory hog from a loop), the sandbox
(sizing the memory limit) and the benchmark (measuring a process tree).
"""
from __future__ import annotations

import os


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (found through their stat lines: works in any PID
    namespace and without the kernel's per-task children lists)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    out, frontier = [], [pid]
    while frontier:
        frontier = [c for p in frontier for c in children(p)]
        out += frontier
    return out


def memory(pid: int, field: str, source: str = "status") -> int | None:
    """A memory figure in bytes: `VmSize`/`VmPeak` from status, `Pss` from smaps_rollup."""
    try:
        with open(f"/proc/{pid}/{source}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None
