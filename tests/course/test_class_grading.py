"""Grading a whole class: layouts, one row per student, resume after a kill, reports."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, QUESTIONS, ROOT, SUBMISSIONS, cli_in_process, max_points,
                     settled)


def make_class(root: Path) -> dict[str, str]:
    """A messy class in GitHub Classroom's layout (one folder per student)."""
    cls = root / "class"
    cls.mkdir()
    plan = {
        "alice": SUBMISSIONS / "correct" / "einsum_style.py",
        "bob": SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py",
        "dup-one": SUBMISSIONS / "wrong" / "mask_ignored.py",
        "dup-two": SUBMISSIONS / "wrong" / "mask_ignored.py",
        "crasher": SUBMISSIONS / "hostile" / "os_exit_in_softmax.py",
        "carol": ROOT / "student_template" / "attention.py",
    }
    for name, src in plan.items():
        (cls / name).mkdir()
        shutil.copy(src, cls / name / "attention.py")
    (cls / "empty").mkdir()
    odd = os.fsdecode(b"j\xe9r\xf4me")  # not UTF-8
    (cls / odd).mkdir()
    shutil.copy(SUBMISSIONS / "correct" / "logsumexp_style.py", cls / odd / "attention.py")
    both = cls / "both"
    both.mkdir()
    shutil.copy(SUBMISSIONS / "correct" / "reference_style.py", both / "attention.py")
    (both / "attention.ipynb").write_text(json.dumps({
        "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return {"class": str(cls), "odd": odd}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("classroom")
    info = make_class(root)
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", info["class"], "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    return {"root": root, "out": out, "proc": r, **info}


def test_every_student_gets_exactly_one_row(graded_class):
    data = json.loads((graded_class["out"] / "grades.json").read_text())
    students = sorted(s["student"] for s in data["submissions"])
    assert len(students) == 9 and len(set(students)) == 9
    rows = {s["student"]: s for s in data["submissions"]}
    assert rows["alice"]["score"] == AUTOGRADED_MAX
    assert rows["dup-one"]["score"] == rows["dup-two"]["score"] < AUTOGRADED_MAX
    # An empty folder: nothing was handed in ("missing"), not an error of the student's.
    assert rows["empty"]["score"] == 0 and "folder is empty" in rows["empty"]["error"]
    assert {q["status"] for q in rows["empty"]["questions"].values()} == {"missing"}
    assert rows["crasher"]["questions"]["softmax"]["status"] == "error"
    assert rows["crasher"]["questions"]["attention"]["status"] == "passed"
    assert rows["both"]["path"].endswith("attention.py")
    assert any("attention.ipynb" in n for n in rows["both"]["notes"])
    odd = next(s for s in students if s.startswith("j"))
    assert rows[odd]["score"] == AUTOGRADED_MAX
    csv_lines = (graded_class["out"] / "grades.csv").read_text(encoding="utf-8").splitlines()
    assert csv_lines[0].split(",")[:8] == ["student", "file", *QUESTIONS]
    assert len(csv_lines) == 10
    feedback = sorted(p.name for p in (graded_class["out"] / "feedback").iterdir())
    pages = [name for name in feedback if name.endswith(".html")]
    assert len(pages) == 9 and feedback == sorted(
        pages + [name.removesuffix(".html") + ".md" for name in pages])   # .md beside each


def test_feedback_files_are_what_the_student_sees(graded_class):
    text = (graded_class["out"] / "feedback" / "bob.md").read_text()
    assert f"softmax: 5 / {max_points('softmax'):g} (partial)" in text
    assert "NaN" in text and "subtract the maximum" in text.lower()
    assert "likely mistake" in text  # the named misconception reaches the student
    assert "expected" not in text.split("hidden case")[1][:300]  # hidden cases stay hidden


def test_rerun_on_an_unchanged_class_regrades_nothing(graded_class):
    r = cli_in_process("grade", "-a", "attention", graded_class["class"], "--out",
                       str(graded_class["out"]))
    assert r.returncode == 0
    assert "8 of 8 submissions unchanged since the last run (cached)" in r.stdout
    assert "grading" not in r.stderr  # no progress bar: nothing to grade


def _snapshot(out: Path) -> dict:
    data = json.loads((out / "grades.json").read_text())
    for s in data["submissions"]:
        s.pop("seconds", None)
    return {"json": data, "csv": (out / "grades.csv").read_text(),
            "feedback": {p.name: p.read_text() for p in (out / "feedback").iterdir()}}


@pytest.mark.slow
def test_resume_after_kill_gives_the_same_files(clean_loop_run, tmp_path):
    cls, clean = clean_loop_run
    resumed = tmp_path / "resumed"
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "-a", "attention",
                             str(cls), "--out", str(resumed), "--jobs", "1", *LOOP_LIMIT],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _wait_for_cached(resumed, 3, proc)
    helpers = _descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)  # like kill -9 of the whole job
    proc.wait()
    # Counted once nothing of the killed run is left that could still write a result.
    assert _all_gone(helpers), "grading processes outlived a killed grader"
    cache = resumed / ".cache"
    done_before = len(list(cache.glob("*.json")))
    assert 3 <= done_before < CLASS_SIZE and not (resumed / "grades.json").exists()

    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(resumed), "--jobs",
                       "1", *LOOP_LIMIT)
    assert r.returncode == 0
    assert f"{done_before} of {CLASS_SIZE} submissions unchanged" in r.stdout
    assert _snapshot(resumed) == clean


def test_report_has_one_plot_per_question_and_lists_problems(graded_class):
    html = (graded_class["out"] / "report.html").read_text()
    assert html.count('class="question-plot"') == len(QUESTIONS)
    assert "http://" not in html.replace("http://www.w3.org", "") and "src=\"http" not in html
    assert "crasher" in html.split("errored, timed out")[1]
    assert "empty" not in html.split("errored, timed out")[1].split("</table>")[0]
    assert "empty" in html.split('id="missing"')[1]


def test_report_opens_in_a_headless_browser(graded_class, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is installed by `make system-deps`"
    page = (graded_class["out"] / "report.html").resolve()
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=2000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = r.stdout
    assert dom.count('class="question-plot"') == len(QUESTIONS)
    assert "Uncaught" not in r.stderr and "CONSOLE" not in r.stderr
    shot = tmp_path / "report.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", f"--user-data-dir={tmp_path / 'profile2'}",
                    "--window-size=1200,2000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Every plot is inline SVG (one per question, one of the totals).
    assert dom.count('<svg xmlns="http://www.w3.org/2000/svg" class="histogram"') == \
        len(QUESTIONS) + 1


def test_gradescope_export_layout(tmp_path):
    """A Gradescope "export submissions" folder: names come from submission_metadata.yml."""
    export = tmp_path / "assignment_123_export"
    for sub_id, src in (("submission_101", SUBMISSIONS / "correct" / "einsum_style.py"),
                        ("submission_102", SUBMISSIONS / "wrong" / "block_gelu.py")):
        (export / sub_id).mkdir(parents=True)
        shutil.copy(src, export / sub_id / "attention.py")
    (export / "submission_103").mkdir()  # an empty upload
    (export / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :email: ada@example.edu\n"
        "submission_102:\n  :submitters:\n  - :name: Alan Turing\n  - :name: Grace Hopper\n"
        "submission_103:\n  :submitters:\n  - :name: Empty Upload\n")
    out = tmp_path / "out"
    r = cli_in_process("grade", "-a", "attention", str(export), "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {s["student"]: s for s in json.loads((out / "grades.json").read_text())["submissions"]}
    assert sorted(rows) == ["Ada Lovelace", "Alan Turing & Grace Hopper", "Empty Upload"]
    assert rows["Ada Lovelace"]["score"] == AUTOGRADED_MAX
    assert rows["Alan Turing & Grace Hopper"]["questions"]["block"]["status"] != "passed"
    assert rows["Empty Upload"]["score"] == 0 and rows["Empty Upload"]["error"]


# A submission whose softmax never returns: it sleeps, so it holds no CPU while the other job
# grades, and its time limit is long enough that a run caught after two results is still on
# it however loaded the machine is. Every run of the class passes the same limit (it is part
# of the cache key). The other functions delegate to correct helpers, as in the hostile corpus.
LOOP = "aa_loop.py"
LOOP_LIMIT = ("--limit", "question_seconds=20")
CLASS_SIZE = 6


def _loop_class(tmp_path: Path) -> Path:
    cls = tmp_path / "class"
    cls.mkdir()
    for f in sorted((SUBMISSIONS / "wrong").glob("*.py"))[:CLASS_SIZE - 1]:
        shutil.copy(f, cls / f.name)
    source = (SUBMISSIONS / "hostile" / "infinite_loop_softmax.py").read_text()
    public, _, _ = source.partition("\ndef softmax(x, dim=-1):\n    n = 0\n")
    assert public != source, "the hostile file's spinning softmax moved"
    (cls / LOOP).write_text(public + "\n\ndef softmax(x, dim=-1):\n"
                            "    import time\n    time.sleep(3600)\n")
    return cls


def _cached(out: Path) -> set[str]:
    """The submissions whose results are in the run's cache (file names)."""
    names = set()
    for p in (out / ".cache").glob("*.json"):
        names.add(os.path.basename(json.loads(p.read_text())["path"]))
    return names


def _start_grading(cls: Path, out: Path) -> subprocess.Popen:
    # SIGINT back to its default, so the grader turns it into KeyboardInterrupt like at a
    # terminal (a shell may have started this test run with it ignored).
    return subprocess.Popen([sys.executable, "-m", "autograder", "grade", "-a", "attention",
                             str(cls), "--out", str(out), "--jobs", "2", *LOOP_LIMIT],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_cached(out: Path, n: int, proc: subprocess.Popen) -> None:
    """Until `n` results are in the cache; fails if the grader ends first. The bound on polls
    only keeps a hung grader from hanging the suite: every submission has a time limit."""
    for _ in range(12_000):
        if proc.poll() is not None:
            break
        if (out / ".cache").is_dir() and len(list((out / ".cache").glob("*.json"))) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the grader did not cache {n} results before it ended")


def _descendants(pid: int) -> list[int]:
    from autograder.sandbox.procfs import descendants

    return descendants(pid)


def _all_gone(pids: list[int]) -> bool:
    """Whether every one of `pids` has ended (a zombie has), once killed ones are gone."""
    return not settled(lambda: [p for p in pids
                                if Path(f"/proc/{p}").exists() and "Z" not in _state(p)],
                       polls=200, pause=0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.fixture(scope="module")
def clean_loop_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("loopclass")
    cls = _loop_class(root)
    out = root / "clean"
    assert cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out),
                          *LOOP_LIMIT).returncode == 0
    return cls, _snapshot(out)


def _grading_midway(clean_loop_run, tmp_path: Path):
    """The loop class being graded with two jobs, two results in."""
    cls, clean = clean_loop_run
    out = tmp_path / "out"
    proc = _start_grading(cls, out)
    _wait_for_cached(out, 2, proc)
    return cls, clean, out, proc


@pytest.mark.slow
def test_ctrl_c_stops_a_parallel_run_at_once_and_a_rerun_finishes_it(clean_loop_run, tmp_path):
    cls, clean, out, proc = _grading_midway(clean_loop_run, tmp_path)
    helpers = _descendants(proc.pid)      # grading processes, fork servers, workers
    assert helpers
    before = _cached(out)
    assert LOOP not in before               # caught while the loop is being graded
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err[-2000:]
    # Stopped at once: the loop was not waited for (its time limit would have put its result
    # in the cache), and nothing was started after the signal (at most the other job's
    # submission, already being graded, may have finished meanwhile).
    after = _cached(out)
    assert LOOP not in after, "the interrupted grader waited for the loop to time out"
    assert len(after - before) <= 1, after - before
    assert "interrupted" in err and "run the same command again" in err
    assert "Traceback" not in err
    assert _all_gone(helpers), "grading processes outlived an interrupted grader"
    assert not (out / "grades.json").exists()

    assert cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out),
                          *LOOP_LIMIT).returncode == 0
    assert _snapshot(out) == clean


@pytest.mark.slow
def test_grading_processes_die_with_a_killed_grader(clean_loop_run, tmp_path):
    cls, clean, out, proc = _grading_midway(clean_loop_run, tmp_path)
    helpers = _descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)     # the grader alone, not its process group
    proc.communicate()
    assert _all_gone(helpers), "grading processes outlived a killed grader"
    cached = len(list((out / ".cache").glob("*.json")))
    time.sleep(1)
    assert len(list((out / ".cache").glob("*.json"))) == cached   # nobody goes on writing

    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), *LOOP_LIMIT)
    assert r.returncode == 0
    assert f"{cached} of {CLASS_SIZE} submissions unchanged" in r.stdout
    assert _snapshot(out) == clean


@pytest.mark.slow
def test_a_grading_process_that_dies_costs_no_result(clean_loop_run, tmp_path):
    cls, clean, out, proc = _grading_midway(clean_loop_run, tmp_path)
    from autograder.sandbox.procfs import children

    # The grading processes: forks of the grader (its command line), not its fork servers.
    own = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    graders = [p for p in children(proc.pid) if Path(f"/proc/{p}/cmdline").read_bytes() == own]
    assert graders
    os.kill(graders[0], signal.SIGKILL)   # as the kernel's out-of-memory killer would
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    assert "a grading process stopped unexpectedly" in err
    assert _snapshot(out) == clean
