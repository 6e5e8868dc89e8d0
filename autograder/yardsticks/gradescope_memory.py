"""The memory of one Gradescope run, measured as Gradescope's container limit sees it.

`measure_run` lays out a simulated /autograder (source/ from the built zip, one submission),
runs the zip's own `run_autograder` in a fresh memory cgroup made for it (a child of this
process's own cgroup, v1 or v2; this needs root or a delegated cgroup) and reports:

* `cgroup_peak`: the cgroup's peak charge (v1 memory.max_usage_in_bytes, v2 memory.peak): every
  page of the run, page cache included (what a container limit counts before it reclaims);
* `anon_peak`: the peak of anonymous and shared memory (sampled; what no reclaim frees without
  swap: the part that must fit);
* `pss_peak`: the peak of the summed PSS of the run's processes (sampled from /proc; the only
  figure where no cgroup can be made, and then said so);

with an optional limit (`limit_mib`, e.g. Gradescope's 768) to see what a submission gets there.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import procfs
from ..sandbox.cgroup import MOUNT, own_cgroup_paths


class TreeMemory:
    """Samples the summed PSS of a process and all its descendants; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = [self.pid, *procfs.descendants(self.pid)]
            total = sum(procfs.memory(p, "Pss", "smaps_rollup") or 0 for p in pids)
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


MiB = 2**20


class MemoryCgroup:
    """A memory cgroup made for one measured run, removed afterwards."""

    def __init__(self, folder: Path, version: int):
        self.folder, self.version = folder, version

    @classmethod
    def create(cls, limit_bytes: int | None = None,
               mount: Path = MOUNT) -> tuple["MemoryCgroup | None", str]:
        """(the cgroup, "") or (None, why none could be made)."""
        v2, v1 = own_cgroup_paths(Path("/proc/self/cgroup").read_text())
        name = f"autograder-measure-{os.getpid()}-{time.monotonic_ns()}"
        if v1 is not None and (mount / "memory").is_dir():
            folder, version = mount / "memory" / v1.lstrip("/") / name, 1
        elif v2 is not None and (mount / "cgroup.controllers").is_file():
            folder, version = mount / v2.lstrip("/") / name, 2
        else:
            return None, "no memory cgroup is mounted"
        try:
            folder.mkdir()
        except OSError as e:
            return None, f"cannot make a memory cgroup ({e.strerror}: needs root or delegation)"
        group = cls(folder, version)
        if version == 2 and not (folder / "memory.max").exists():
            group.remove()
            return None, "the memory controller is not enabled for this process's cgroup"
        if limit_bytes:
            (folder / ("memory.limit_in_bytes" if version == 1 else "memory.max")).write_text(
                str(limit_bytes))
        return group, ""

    def command(self, argv: list[str]) -> list[str]:
        """`argv`, started inside this cgroup (the shell moves itself in, then execs)."""
        return ["/bin/sh", "-c", f'echo $$ > "{self.folder}/cgroup.procs" && exec "$@"', "sh",
                *argv]

    def peak(self) -> int:
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"
        try:
            return int((self.folder / name).read_text())
        except (OSError, ValueError):
            return 0

    def anon(self) -> int:
        stat = {}
        try:
            for line in (self.folder / "memory.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                stat[key] = int(value) if value.isdigit() else 0
        except OSError:
            return 0
        if self.version == 1:
            return stat.get("total_rss", 0) + stat.get("total_shmem", 0)
        return stat.get("anon", 0) + stat.get("shmem", 0)

    def oom_kills(self) -> int:
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            for line in (self.folder / name).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        for _ in range(50):
            try:
                self.folder.rmdir()
                return
            except OSError:
                time.sleep(0.1)    # processes still leaving


@dataclass
class RunMemory:
    seconds: float
    results: dict | None
    pss_peak: int
    cgroup_peak: int | None = None
    anon_peak: int | None = None
    oom_kills: int = 0
    why_no_cgroup: str = ""
    statuses: dict = field(default_factory=dict)

    def summary(self) -> str:
        score = "no results.json" if self.results is None else \
            f"score {self.results.get('score', 0):g}"
        if self.cgroup_peak is None:
            return (f"{self.pss_peak / MiB:.0f} MiB (summed PSS of its processes; no cgroup: "
                    f"{self.why_no_cgroup}), {score}, {self.seconds:.1f} s")
        return (f"{self.cgroup_peak / MiB:.0f} MiB in its memory cgroup (page cache included), "
                f"{self.anon_peak / MiB:.0f} MiB anonymous and shared; summed PSS "
                f"{self.pss_peak / MiB:.0f} MiB; {score}, {self.seconds:.1f} s"
                + (f", {self.oom_kills} out-of-memory kills" if self.oom_kills else ""))


def layout(zip_path: Path, submission: Path, root: Path, name: str) -> Path:
    """A Gradescope layout at `root`: source/ (the zip, permissions kept), submission/."""
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    shutil.copy(submission, root / "submission" / name)
    return root


def measure_run(zip_path: Path, submission: Path, *, python: str, student_file: str,
                limit_mib: int | None = None, use_cgroup: bool = True) -> RunMemory:
    """Run the zip's run_autograder on `submission` once, measured (see the module's text)."""

    with tempfile.TemporaryDirectory(prefix="autograder-gs-") as tmp:
        root = layout(zip_path, submission, Path(tmp) / "autograder", student_file)
        group, why = MemoryCgroup.create(limit_mib * MiB if limit_mib else None) \
            if use_cgroup else (None, "not asked for")
        argv = [str(root / "source" / "run_autograder")]
        env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": python,
               # Gradescope's containers have no bubblewrap: root gets the `user` level there.
               "AUTOGRADER_SANDBOX": "user" if os.geteuid() == 0 else "auto"}
        env.pop("PYTHONPATH", None)
        anon_peak = [0]
        try:
            start = time.perf_counter()
            proc = subprocess.Popen(group.command(argv) if group else argv, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stop = threading.Event()

            def sample_anon() -> None:
                while group is not None and not stop.is_set():
                    anon_peak[0] = max(anon_peak[0], group.anon())
                    stop.wait(0.02)

            sampler = threading.Thread(target=sample_anon, daemon=True)
            sampler.start()
            tree = TreeMemory(proc.pid)
            proc.wait()
            stop.set()
            sampler.join()
            pss = tree.stop()
            seconds = time.perf_counter() - start
            results_file = root / "results" / "results.json"
            results = json.loads(results_file.read_text()) if results_file.is_file() else None
            out = RunMemory(seconds, results, pss, why_no_cgroup=why)
            if group is not None:
                out.cgroup_peak, out.anon_peak = group.peak(), anon_peak[0]
                out.oom_kills = group.oom_kills()
            return out
        finally:
            if group is not None:
                group.remove()
