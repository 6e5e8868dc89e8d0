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


def _own_paths(proc_cgroup: str) -> tuple[str | None, str | None]:
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
    v2, v1 = _own_paths(proc_cgroup)
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
        files = (["memory.limit_in_bytes"] if self.version == 1
                 else ["memory.max", "memory.swap.max"])
        ok = True
        for name in files:
            value = "0" if name == "memory.swap.max" else str(int(limit))
            try:
                (self.path / name).write_text(value)
            except OSError:
                ok = ok and name == "memory.swap.max"     # no swap accounting: nothing to cap
        if self.version == 1 and (self.path / "memory.memsw.limit_in_bytes").exists():
            try:    # memory and swap together: no more than the memory itself
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(int(limit)))
            except OSError:
                pass
        return ok

    def oom_kills(self) -> int:
        """How many processes in it the kernel killed for its limit so far."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        return _stat(self.path / name).get("oom_kill", 0)

    def describe(self) -> str:
        return f"memory cgroup (v{self.version}) of the whole sandbox"

    def remove(self) -> None:
        try:
            self.path.rmdir()
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
    v2, v1 = _own_paths(proc_cgroup)
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
        path = parent / name
        try:
            path.mkdir()
        except FileExistsError:
            pass
        except OSError:
            continue
        group = Group(path, version)
        if group.set_limit(_UNLIMITED) or (path / "memory.max").exists():
            return group
        group.remove()
    return None
__all__ = ["Group", "MemoryState", "describe", "make_group", "memory_state", "pressure"]
