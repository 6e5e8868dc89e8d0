"""The memory cgroup this process runs in (a container's limit: Gradescope's 768 MB, say).

A worker held to its address-space rlimit can still push the whole container to its memory
limit: the kernel then reclaims file pages (torch's code) from every process and the run slows
to a crawl, so a correct but memory-hungry submission looks like an endless loop. The trusted
side asks `pressure()` when a worker runs out of time: if the container's unreclaimable memory
(anonymous and shared pages, not the page cache) was close to its limit, the case is reported
as out of memory, not as a time limit.

Both cgroup versions are read: v2 (`memory.max`, `memory.stat` anon/shmem, the nearest limited
ancestor) and v1 (`memory.stat` hierarchical_memory_limit, total_rss, total_shmem).
"""
from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MOUNT = Path("/sys/fs/cgroup")
# Within this of the limit counts as pressure: about what torch's code and the interpreters need
# resident, which the kernel otherwise keeps evicting and reading back.
MARGIN_BYTES = 96 * 2**20
_UNLIMITED = 2**60


@dataclass(frozen=True)
class MemoryState:
    limit: int       # bytes
    used: int        # anonymous + shared memory (what no reclaim can free without swap)

    @property
    def free(self) -> int:
        return self.limit - self.used


def _stat(path: Path) -> dict[str, int]:
    out = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                out[key] = int(value)
    except OSError:
        pass
    return out


def own_cgroup_paths(proc_cgroup: str) -> tuple[str | None, str | None]:
    """(v2 path, v1 memory path) of this process, from /proc/self/cgroup's text."""
    v2 = v1 = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "memory" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _candidates(base: Path, path: str | None) -> list[Path]:
    """The cgroup folder of `path` and its ancestors up to `base` (a container may mount its
    own cgroup as the root, while /proc/self/cgroup still names the host's path)."""
    out = []
    if path:
        p = base / path.lstrip("/")
        while True:
            out.append(p)
            if p == base or base not in p.parents:
                break
            p = p.parent
    if base not in out:
        out.append(base)
    return out


def memory_state(mount: Path = MOUNT, proc_cgroup: str | None = None) -> MemoryState | None:
    """This process's memory cgroup: its effective limit and unreclaimable use; None where
    there is no limit or no readable cgroup."""
    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            return None
    v2, v1 = own_cgroup_paths(proc_cgroup)
    v1_base = mount / "memory"
    if v1 is not None and v1_base.is_dir():
        for folder in _candidates(v1_base, v1):
            stat = _stat(folder / "memory.stat")
            limit = stat.get("hierarchical_memory_limit")
            if limit is not None:
                if limit >= _UNLIMITED:
                    return None
                return MemoryState(limit, stat.get("total_rss", 0) + stat.get("total_shmem", 0))
    if v2 is not None:
        for folder in _candidates(mount, v2):
            try:
                text = (folder / "memory.max").read_text().strip()
            except OSError:
                continue
            if text == "max" or not text.isdigit():
                continue
            stat = _stat(folder / "memory.stat")
            return MemoryState(int(text), stat.get("anon", 0) + stat.get("shmem", 0))
    return None


def pressure(state: MemoryState | None = None) -> MemoryState | None:
    """The cgroup's state if its unreclaimable memory is within MARGIN_BYTES of its limit (or
    a tenth of it, for small limits), else None."""
    state = state if state is not None else memory_state()
    if state is None:
        return None
    return state if state.free <= max(MARGIN_BYTES, state.limit // 10) else None


def describe(state: MemoryState) -> str:
    return f"{state.used / 2**20:.0f} of {state.limit / 2**20:.0f} MiB"





# ------------------------------------------------------------------ a sandbox's own cgroup

def _v2_mounts() -> list[Path]:
    """Where the unified hierarchy is mounted (all of /sys/fs/cgroup, or its `unified` folder
    on a hybrid machine)."""
    found = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split(" - ")
            if len(parts) == 2 and parts[1].split(" ")[0] == "cgroup2":
                found.append(Path(parts[0].split(" ")[4]))
    except OSError:
        pass
    return found


class Group:
    """A memory cgroup made for one sandbox: its fork server and every worker it forks are in
    it, so their memory together (address space or not: tmpfs pages, memfd, pipes, every
    process) has one bound, which no rlimit gives."""

    def __init__(self, path: Path, version: int):
        self.path, self.version = path, version

    def enter(self) -> None:
        """Move the calling process in (its children follow); "0" names the writer itself."""
        with open(self.path / "cgroup.procs", "w") as f:
            f.write("0")

    def usage(self) -> int:
        name = "memory.usage_in_bytes" if self.version == 1 else "memory.current"
        try:
            return int((self.path / name).read_text().strip())
        except (OSError, ValueError):
            return 0

    def set_limit(self, limit: int) -> bool:
        if self.version == 1:
            return self._set_v1_limit(int(limit))
        ok = True
        for name in ("memory.max", "memory.swap.max"):
            value = "0" if name == "memory.swap.max" else str(int(limit))
            try:
                (self.path / name).write_text(value)
            except OSError:
                ok = ok and name == "memory.swap.max"     # no swap accounting: nothing to cap
        return ok

    def _set_v1_limit(self, limit: int) -> bool:
        """v1 with swap accounting keeps memory <= memory and swap together: raising the limit
        past the old memsw figure is refused until memsw is raised first, and lowering memsw
        below the old memory limit likewise. Memory and swap together get the memory limit
        (no swap for a worker)."""
        memory = self.path / "memory.limit_in_bytes"
        memsw = self.path / "memory.memsw.limit_in_bytes"
        order = [memory, memsw] if memsw.exists() else [memory]
        try:
            if len(order) == 2 and limit > int(memory.read_text()):
                order.reverse()
        except (OSError, ValueError):
            pass
        ok = True
        for path in order:
            try:
                path.write_text(str(limit))
            except OSError:
                ok = ok and path == memsw
        return ok

    def oom_kills(self) -> int:
        """How many processes in it the kernel killed for its limit so far."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        return _stat(self.path / name).get("oom_kill", 0)

    def describe(self) -> str:
        return f"memory cgroup (v{self.version}) of the whole sandbox"

    def pids(self) -> set[int]:
        """The processes in it (v1 lists threads in `tasks` too), as this process sees them."""
        found: set[int] = set()
        for name in ("cgroup.procs", "tasks"):
            try:
                found.update(int(p) for p in (self.path / name).read_text().split())
            except (OSError, ValueError):
                pass
        return found - {0, os.getpid()}

    def kill_all(self) -> None:
        """SIGKILL every process left in it (v2's `cgroup.kill` where the kernel has it),
        never the calling process."""
        try:
            mine = str(os.getpid()) in (self.path / "cgroup.procs").read_text().split()
        except OSError:
            mine = True
        if not mine:
            try:
                (self.path / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def remove(self, wait: float = 0.5, kill_wait: float = 10.0) -> bool:
        """Remove it. Its processes may still be dying (a killed worker frees its memory
        first): they get `wait` seconds to end, then whatever is left is killed and gets
        `kill_wait` more. A folder that stays is never reused (`make_group` names each one
        afresh and removes those of grading runs that are gone)."""
        deadline, killed = time.monotonic() + wait, False
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                pass
            if time.monotonic() >= deadline:
                if killed:
                    return False
                self.kill_all()
                deadline, killed = time.monotonic() + kill_wait, True
            time.sleep(0.02)


# A sandbox's group is named after the PID namespace and process id of the grading process
# that made it, so one whose maker is gone (a grading run killed before it could clean up) is
# recognised and removed by the next run, and a group is never reused: a reused one would bring
# its count of processes the kernel killed, read as a memory limit for the next worker.
_PREFIX = "autograder"
_made = itertools.count()


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def sandbox_group_name(slot: int) -> str:
    """A new name for a sandbox's group, unique on this machine."""
    return f"{_PREFIX}-{_pid_namespace()}-{os.getpid()}-{slot}-{next(_made)}"


def _maker_gone(name: str) -> bool:
    parts = name.split("-")
    if len(parts) != 5 or parts[0] != _PREFIX or not all(p.isdigit() for p in parts[1:]):
        return False
    if parts[1] != _pid_namespace():       # made from another PID namespace: not ours to judge
        return False
    return not Path(f"/proc/{parts[2]}").exists()


def _entries_named(parent: Path, parts: int) -> list[Path]:
    try:
        return [e for e in parent.glob(f"{_PREFIX}-*") if len(e.name.split("-")) == parts]
    except OSError:
        return []


def _remove_stale(parent: Path, version: int) -> None:
    """Remove the groups of grading runs that are gone, with any processes left in them."""
    try:
        entries = [e for e in parent.iterdir() if e.is_dir() and _maker_gone(e.name)]
    except OSError:
        return
    for entry in entries:
        Group(entry, version).remove(wait=0.0, kill_wait=2.0)
    # Named by earlier versions (autograder-<pid>-<slot>): removed only when empty.
    for entry in _entries_named(parent, 3):
        try:
            entry.rmdir()
        except OSError:
            pass


def make_group(name: str, mount: Path = MOUNT) -> Group | None:
    """A new memory cgroup `name` under this process's own (v1 `memory` hierarchy, or v2 where
    the memory controller is enabled for its children), or None where this process may not
    make one (no root or delegation, a read-only /sys/fs/cgroup in a container)."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        return None
    v2, v1 = own_cgroup_paths(proc_cgroup)
    tries: list[tuple[Path, int]] = []
    if v1 is not None and (mount / "memory").is_dir():
        tries += [(p, 1) for p in _candidates(mount / "memory", v1)[:1] + [mount / "memory"]]
    if v2 is not None:
        for root in _v2_mounts():
            tries += [(p, 2) for p in _candidates(root, v2)[:1] + [root]]
    for parent, version in tries:
        if version == 2:
            try:
                if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                    continue
            except OSError:
                continue
        _remove_stale(parent, version)
        path = parent / name
        try:
            path.mkdir()
        except OSError:     # FileExistsError too: never reuse a group (see sandbox_group_name)
            continue
        group = Group(path, version)
        if group.set_limit(_UNLIMITED) or (path / "memory.max").exists():
            return group
        group.remove()
    return None
__all__ = ["Group", "MemoryState", "describe", "make_group", "memory_state", "pressure",
           "sandbox_group_name"]
