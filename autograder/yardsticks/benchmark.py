"""`autograder benchmark`: grading speed and memory, measured against peers in the same run.

It builds a class from a corpus folder (subfolders such as correct/, wrong/, broken/ of
submission files), each copy made unique, grades it with `autograder grade` in a subprocess
while sampling the memory (PSS) of the whole process tree, then measures, in the same run, the
peers the targets are stated against: `otter run` on a sample of the same submissions, and
`python -c "import torch"` for the student's `autograder check`. It also grades, in one
grading process, a few honest submissions and then the corpus's forged-reply submissions
(`hostile/forged_reply_*.py`: workers that send malformed replies, one large buffer referenced
thousands of times...) and prints that trusted process's peak memory (VmHWM) for each, side by
side: what a hostile reply may cost the grader is bounded (see `sandbox/wire.py`).
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .gradescope_memory import TreeMemory
from ..sandbox import procfs


def make_class(corpus: Path, n: int, dest: Path) -> dict[str, int]:
    groups = {d.name: sorted(d.glob("*.py")) for d in sorted(corpus.iterdir())
              if d.is_dir() and any(d.glob("*.py")) and d.name != "hostile"}
    pool = [(g, f) for g, files in groups.items() for f in files]
    if not pool:
        raise ValueError(f"no submissions found under {corpus}")
    counts: dict[str, int] = {}
    for i in range(n):
        group, src = pool[i % len(pool)]
        counts[group] = counts.get(group, 0) + 1
        text = src.read_text(errors="replace") + f"\n# student {i:04d}\n"
        (dest / f"s{i:04d}_{src.stem}.py").write_text(text)
    return counts


def _time(cmd: list[str], **kw) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, **kw)
    return time.perf_counter() - start


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and everything it waited for)."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user
                  + after.children_system - before.children_system)


# What the class run and the student's check are held to (docs/figures.md).
TARGET_RATE = 10.0          # submissions a second, a class on two cores, every output on
TARGET_CHECK_RATIO = 1.2    # `autograder check` of a correct file against `import torch`


def _side_by_side(rate: float, otter_rate: float | None, check_ratio: float,
                  check_cpu_ratio: float, torch_seconds: float) -> str:
    """The two figures beside their peers, in one table."""
    otter = f"{otter_rate:.2f}/s" if otter_rate else "not measured"
    times = f"{rate / otter_rate:.0f}x" if otter_rate else "-"
    rows = [("", "autograder", "peer", "ratio", "target"),
            ("class run (--out --feedback)", f"{rate:.1f}/s", f"otter run: {otter}", times,
             f">= {TARGET_RATE:g}/s"),
            ("check of a correct file", f"{check_ratio * torch_seconds:.2f} s",
             f"import torch: {torch_seconds:.2f} s",
             f"{check_ratio:.2f} (CPU {check_cpu_ratio:.2f})", f"<= {TARGET_CHECK_RATIO:g}")]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def run(assignment_name: str, corpus: Path, n: int, jobs: int, otter_sample: int,
        repeats: int = 5, gradescope_limit: int = 0, class_runs: int = 3) -> int:
    from ..model.assignment import load_assignment

    assignment = load_assignment(assignment_name)
    work = Path(tempfile.mkdtemp(prefix="autograder-bench-"))
    try:
        cls = work / "class"
        cls.mkdir()
        counts = make_class(corpus, n, cls)
        print(f"class: {n} submissions ({', '.join(f'{v} {k}' for k, v in counts.items())}), "
              f"{jobs} parallel workers, {os.cpu_count()} cores")

        base = [sys.executable, "-m", "autograder"]

        def grade(folder: Path, results: Path, memory: bool = False) -> tuple[float, int]:
            # Every output on, as an instructor runs it: grades.csv and .json, report.html,
            # the feedback files (Markdown and HTML, heatmaps included), gradebook.csv, and
            # each submission's feedback printed. With `memory`, the PSS of the whole tree is
            # sampled: reading every process's page tables 20 times a second costs the run
            # about a fifth of its time, so the timed runs are not sampled.
            start = time.perf_counter()
            proc = subprocess.Popen(base + ["grade", "-a", assignment_name, str(folder),
                                            "--jobs", str(jobs), "--json", str(results),
                                            "--out", str(results.with_suffix("")),
                                            "--feedback"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            mem = TreeMemory(proc.pid) if memory else None
            proc.wait()
            return time.perf_counter() - start, mem.stop() if mem is not None else 0

        # A small class of the same submissions first: its time is the fixed cost of a run
        # (start-up of the grading processes and their sandboxes, the reports), which the
        # marginal rate below leaves out.
        small = work / "small"
        small.mkdir()
        k = min(n - 1, 2 * jobs)
        for f in sorted(cls.glob("*.py"))[:k]:
            shutil.copy(f, small / f.name)
        # Each run in a fresh --out (nothing cached), alternating with the small class; a shared
        # machine's speed drifts from minute to minute: the medians are the figures.
        fixed_runs, walls = [], []
        for i in range(class_runs):
            fixed_runs.append(grade(small, work / f"small{i}.json")[0])
            walls.append(grade(cls, work / f"r{i}.json")[0])
        fixed, wall = statistics.median(fixed_runs), statistics.median(walls)
        _, peak = grade(cls, work / "memory.json", memory=True)   # the same class, sampled
        ours = n / wall
        spread = (f" (median of {class_runs} runs: {n / max(walls):.1f} to "
                  f"{n / min(walls):.1f}/s)" if class_runs > 1 else "")
        print(f"autograder grade: {wall:.1f} s for {n} submissions = {ours:.1f} submissions/s "
              f"end to end{spread} (sandbox on, all hidden cases and gradient checks, --out with "
              f"every report and feedback file, --feedback; target at least {TARGET_RATE:g}/s)")
        print(f"  a run's fixed cost (a class of {k}): {fixed:.1f} s; beyond it, "
              f"{(n - k) / max(wall - fixed, 1e-9):.1f} submissions/s")
        print(f"peak memory (PSS of the grader and all its processes, sampled in a run of its "
              f"own): {peak / 2**30:.2f} GiB")
        try:
            import json

            secs = sorted(s["seconds"] for s in
                          json.loads((work / "r0.json").read_text())["submissions"])
            print(f"per submission: median {statistics.median(secs):.3f} s, "
                  f"slowest {secs[-1]:.2f} s (wall time inside one worker slot)")
        except (OSError, ValueError, KeyError):
            print("per submission: no results file was written")

        hostile = sorted((corpus / "hostile").glob("forged_reply_*.py"))
        if hostile:
            honest_dir, hostile_dir = work / "peak-honest", work / "peak-hostile"
            honest_dir.mkdir()
            hostile_dir.mkdir()
            for f in sorted(cls.glob("*.py"))[:len(hostile)]:
                shutil.copy(f, honest_dir / f.name)
            for f in hostile:
                shutil.copy(f, hostile_dir / f.name)
            honest_peak, _ = trusted_peak(assignment_name, honest_dir)
            hostile_peak, statuses = trusted_peak(assignment_name, hostile_dir)
            print(f"trusted grading process, peak (VmHWM, one process): "
                  f"{honest_peak / 2**20:.0f} MiB for {len(hostile)} honest submissions; "
                  f"{hostile_peak / 2**20:.0f} MiB for {len(hostile)} forged-reply ones "
                  f"({statuses}); a reply may add at most ~420 MiB (sandbox/wire.py)")

        gradescope_memory(assignment, corpus, work, gradescope_limit)

        # `otter generate` alone takes seconds: only when otter is to be timed.
        otter_zip = _otter_zip(assignment, work) if otter_sample > 0 else None
        otter_rate = None
        if otter_zip is not None:
            sample = sorted(cls.glob("*.py"))[:otter_sample]
            times = []
            for f in sample:
                d = work / f"otter-{f.stem}"
                d.mkdir()
                shutil.copy(f, d / assignment.student_file)
                times.append(_time([sys.executable, "-m", "otter", "run", "-a", str(otter_zip),
                                    "-o", str(d), str(d / assignment.student_file)]))
            per = statistics.median(times)
            otter_rate = 1 / per
            print(f"otter run: median {per:.1f} s per submission over {len(sample)} = "
                  f"{otter_rate:.2f} submissions/s; autograder grade is {ours * per:.0f}x faster")
        elif otter_sample > 0:
            print("otter run: not measured (no otter autograder zip could be built here)")
        else:
            print("otter run: not measured (--otter-sample 0)")

        check_file = work / assignment.student_file
        shutil.copy(sorted((corpus / "correct").glob("*.py"))[0]
                    if (corpus / "correct").is_dir() else assignment.template, check_file)
        # Alternating, so that a machine shared with other work slows both alike; each pair's
        # ratio, and the median of those (wall time, and CPU time, which load moves less).
        pairs = [(_timed(base + ["check", str(check_file)]),
                  _timed([sys.executable, "-c", "import torch"])) for _ in range(repeats)]
        wall_ratio = statistics.median(c[0] / t[0] for c, t in pairs)
        cpu_ratio = statistics.median(c[1] / t[1] for c, t in pairs)
        c, t = statistics.median(c[0] for c, _ in pairs), statistics.median(t[0] for _, t in pairs)
        print(f"autograder check: median {c:.2f} s; python -c 'import torch': median {t:.2f} s;"
              f" ratio {wall_ratio:.2f} (CPU time {cpu_ratio:.2f}; medians of {repeats} "
              f"alternating pairs; target at most {TARGET_CHECK_RATIO:g})")
        print()
        print(_side_by_side(ours, otter_rate if otter_zip is not None else None, wall_ratio,
                            cpu_ratio, t))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# A correct submission that also keeps a tensor of this size alive: the room a student has.
ROOM_TENSOR_MB = 400


def gradescope_memory(assignment, corpus: Path, work: Path, limit_mib: int = 0) -> None:
    """Print the peak memory of one Gradescope run (the zip's run_autograder on a correct
    submission); with `limit_mib`, also what a correct submission holding a 400 MB tensor
    gets under that container limit."""
    from ..platforms.build import build_gradescope
    from .gradescope_memory import measure_run

    correct = sorted((corpus / "correct").glob("*.py"))
    if not correct:
        print("gradescope run: not measured (no correct submission in the corpus)")
        return
    (work / "gs").mkdir()
    zip_path = build_gradescope(assignment, work / "gs")
    m = measure_run(zip_path, correct[0], python=sys.executable,
                    student_file=assignment.student_file)
    print(f"gradescope run, peak memory (one correct submission, no limit): {m.summary()}")
    if limit_mib:
        big = work / "gs" / "room.py"
        big.write_text(correct[0].read_text() + "\n\n# Holds a large tensor for the whole run.\n"
                       f"import torch as _t\n_ROOM = _t.ones({ROOM_TENSOR_MB} * 2**20 // 4)\n")
        m = measure_run(zip_path, big, python=sys.executable,
                        student_file=assignment.student_file, limit_mib=limit_mib)
        statuses = {}
        for t in (m.results or {}).get("tests", []):
            statuses[t["name"]] = f"{t['score']:g}/{t['max_score']:g}"
        print(f"gradescope run under a {limit_mib} MiB limit, a correct submission holding a "
              f"{ROOM_TENSOR_MB} MB tensor: {m.summary()}; {statuses}")


def trusted_peak(assignment_name: str, folder: Path) -> tuple[int, str]:
    """(peak resident memory in bytes, what the rows say) of one fresh process grading the
    submissions of `folder` by itself (`--jobs 1`: the trusted side of every reply is there)."""
    code = ("import sys; from autograder.yardsticks.benchmark import _grade_and_report_peak; "
            "_grade_and_report_peak(sys.argv[1], sys.argv[2])")
    r = subprocess.run([sys.executable, "-c", code, assignment_name, str(folder)],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("peak "):
            _, peak, statuses = line.split(" ", 2)
            return int(peak), statuses
    raise RuntimeError(f"measuring the trusted process failed: {r.stderr[-2000:]}")


def _grade_and_report_peak(assignment_name: str, folder: str) -> None:
    from collections import Counter

    from ..model.assignment import load_assignment
    from ..course.batch import grade_class
    from ..course.classlist import discover

    assignment = load_assignment(assignment_name)
    graded = grade_class(assignment, discover([folder], assignment.student_file), out=None,
                         jobs=1, sandbox_level="auto", limits=assignment.limits, progress=False)
    rows = Counter("malformed reply" if "malformed reply" in (g.result.error or "") else
                   "internal error" if "grader failed" in (g.result.error or "") else
                   f"{g.result.score:g}/{g.result.max_score:g}" for g in graded)
    summary = ", ".join(f"{n} {what}" for what, n in sorted(rows.items()))
    print(f"peak {procfs.memory(os.getpid(), 'VmHWM')} {summary}")


def _otter_zip(assignment, work: Path) -> Path | None:
    from ..platforms.build import build_otter

    try:
        (work / "otter-build").mkdir(exist_ok=True)
        return build_otter(assignment, work / "otter-build")
    except Exception as e:  # noqa: BLE001 - the peer is optional; say why it is missing
        print(f"(could not build the otter zip: {e})")
        return None
