"""A class run's grading processes are forks of the grader, which started their sandboxes and
imported torch once for all of them (`batch._forked_start`): the same grades as one process,
nothing left running or on disk after the run, and a spawned pool wherever a fork would not be
safe. The command lines end without torch's teardown (`console.ending`), having done all an
exit does for others."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from helpers import ROOT, SUBMISSIONS, cli_in_process

FILES = {
    "a.py": SUBMISSIONS / "correct" / "einsum_style.py",
    "b.py": SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py",
    "c.py": SUBMISSIONS / "wrong" / "mask_ignored.py",
    "d.py": SUBMISSIONS / "broken" / "syntax_error.py",
}


def _python(script: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _grades(out: Path) -> dict:
    """Each file's score and per-question statuses (what a grade is; not the timings)."""
    data = json.loads((out / "grades.json").read_text())
    return {Path(s["path"]).name: (s["score"], {q: v["status"] for q, v in
                                                s["questions"].items()})
            for s in data["submissions"]}


def test_a_class_graded_by_forks_of_the_grader_leaves_nothing_behind(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    for name, src in FILES.items():
        shutil.copy(src, cls / name)
    # The grader runs under a process that becomes the parent of whatever it leaves running
    # (a child subreaper): a fork server or worker outliving the run would show up there.
    out = tmp_path / "forked"
    r = _python(f"""
        import ctypes, os, subprocess, sys, time
        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
        proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "-a",
                                 "attention", {str(cls)!r}, "--out", {str(out)!r},
                                 "--jobs", "2"], stdout=subprocess.DEVNULL,
                                stderr=open({str(tmp_path / "err")!r}, "w"))
        # The grader's children as they run, each by the last command line seen: forks of it
        # have its own (a child it starts a program in has it too, until its exec; an ended
        # one has none).
        own, seen = None, {{}}
        while proc.poll() is None:
            try:
                own = own or open(f"/proc/{{proc.pid}}/cmdline").read()
                for p in open(f"/proc/{{proc.pid}}/task/{{proc.pid}}/children").read().split():
                    seen[p] = open(f"/proc/{{p}}/cmdline").read() or seen.get(p, "")
            except OSError:
                pass
            time.sleep(0.02)
        forks = [p for p, line in seen.items() if line == own]
        spawned = [p for p, line in seen.items() if "spawn_main" in line]
        proc.wait()

        def alive():    # children of ours now, ended ones (zombies) aside
            found = []
            for p in open(f"/proc/self/task/{{os.getpid()}}/children").read().split():
                try:
                    if open(f"/proc/{{p}}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
                        found.append(p)
                except OSError:
                    pass
            return found

        for _ in range(100):     # what is still ending when the grader has ended
            if not alive():
                break
            time.sleep(0.05)
        print(len(forks), len(spawned), proc.pid, proc.returncode, len(alive()))
        """)
    assert r.returncode == 0, r.stderr[-3000:]
    forks, spawned, pid, code, left = r.stdout.split()[-5:]
    assert code == "0", (tmp_path / "err").read_text()[-3000:]
    assert (forks, spawned) == ("2", "0"), "the grading processes were not forks of the grader"
    assert left == "0", "processes outlived the grader"
    # Nothing of the run is left on disk: its folder of shared outcomes, its sandboxes'
    # memory cgroups (named after the process that made them).
    assert not list(Path(tempfile.gettempdir()).glob(f"autograder-outcomes-{pid}-*"))
    groups = Path("/sys/fs/cgroup")
    assert not [g for depth in ("", "*/", "*/*/", "*/*/*/")
                for g in groups.glob(f"{depth}autograder-*-{pid}-*")]

    one = tmp_path / "one"
    assert cli_in_process("grade", "-a", "attention", str(cls), "--out", str(one),
                          "--jobs", "1").returncode == 0
    assert _grades(out) == _grades(one)
    assert _grades(out)["a.py"][0] > _grades(out)["b.py"][0]


def test_the_grader_forks_its_grading_processes_only_when_alone():
    """Started sandboxes and the grading code imported, with no thread: numpy's BLAS started
    no pool (the variable it reads is set for the import only). With a thread running, no
    fork: nothing is started, and each grading process starts its own."""
    r = _python("""
        import os, sys, threading
        from autograder.course import batch
        from autograder.model.assignment import load_assignment
        from autograder.model.limits import Limits
        from autograder.sandbox import choose_level

        grader = batch._Grader(load_assignment("attention"), choose_level("auto"), Limits(),
                               None, False, None)
        stop = threading.Event()
        helper = threading.Thread(target=stop.wait)
        helper.start()
        print("with a thread:", batch._forked_start(grader, 2), "torch" in sys.modules)
        stop.set()
        helper.join()
        started = batch._forked_start(grader, 2)
        print("alone:", sorted(started), "torch" in sys.modules,
              "autograder.grading.grade" in sys.modules,
              len(os.listdir("/proc/self/task")), "OPENBLAS_NUM_THREADS" in os.environ)
        for sandbox in started.values():
            sandbox.wait_ready()
            sandbox.close()
        """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "with a thread: None False" in r.stdout
    assert "alone: [0, 1] True True 1 False" in r.stdout


def test_a_thread_just_joined_does_not_count_as_running():
    """`join` returns before the thread's native exit, so it can still be listed for a moment:
    a class run that had joined a thread just before would spawn its grading processes (or, had
    it not looked, fork beside that exit)."""
    r = _python("""
        import threading
        from autograder.sandbox.shared_start import other_threads

        seen = []
        for _ in range(2000):
            stop = threading.Event()
            helper = threading.Thread(target=stop.wait)
            helper.start()
            stop.set()
            helper.join()
            seen.append(other_threads())
        print("not alone:", len([s for s in seen if s is not None]))
        """)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "not alone: 0" in r.stdout


def test_a_command_line_ends_as_an_exit_would():
    """Without torch's teardown, but with its status, its output, its `atexit` functions and
    its threads joined."""
    r = _python("""
        import atexit, sys, threading, time
        import torch
        from autograder.console.ending import end

        atexit.register(lambda: print("atexit ran"))
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
        sys.stdout.write("no newline yet")
        end(3)
        """)
    assert r.returncode == 3
    assert r.stdout.startswith("no newline yet")
    assert "thread done" in r.stdout and "atexit ran" in r.stdout
    assert r.stdout.index("thread done") < r.stdout.index("atexit ran")
