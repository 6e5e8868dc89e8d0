"""`forked_tasks.run_forked`, which `autograder mutants` grades mutants with: a task that never
ends, one that allocates without end, one that kills its worker and one that raises each get a
result that says so, and the tasks after them still run, in order, with no process left."""
from __future__ import annotations

import os
import signal
import time

from helpers import own_processes

from autograder.authoring.forked_tasks import run_forked


def _task(i: int) -> dict:
    if i == 1:
        while True:
            time.sleep(0.05)
    if i == 2:
        hoard = []
        while True:
            hoard.append(bytearray(256 * 1024 * 1024))
    if i == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    if i == 4:
        raise ValueError("no such thing")
    print("a task's own output")    # goes nowhere: not the run's output
    return {"status": "ok", "square": i * i, "pid": os.getpid()}


def test_every_task_gets_a_result_whatever_it_does(capfd):
    before = {p["pid"] for p in own_processes()}
    done = []
    results = run_forked(8, _task, jobs=2, seconds=5, memory_mb=512,
                         done=lambda i, r: done.append(i))
    assert results[1]["status"] == "timeout" and "still running after 5 s" in \
        results[1]["detail"]
    assert results[2]["status"] == "memory"
    assert results[3]["status"] == "crashed" and results[3]["detail"] == f"signal {signal.SIGKILL}"
    assert results[4] == {"status": "task_error", "detail": "ValueError: no such thing",
                          "seconds": results[4]["seconds"]}
    for i in (0, 5, 6, 7):
        assert results[i]["status"] == "ok" and results[i]["square"] == i * i
    assert sorted(done) == list(range(8))
    # Workers are reused between tasks, and replaced when one is killed.
    assert len({results[i]["pid"] for i in (0, 5, 6, 7)}) <= 4
    assert {p["pid"] for p in own_processes()} <= before
    assert "a task's own output" not in capfd.readouterr().out


def test_one_job_runs_the_tasks_one_after_another():
    results = run_forked(3, lambda i: {"status": "ok", "pid": os.getpid()}, jobs=1, seconds=30)
    assert len({r["pid"] for r in results}) == 1 and os.getpid() not in \
        {r["pid"] for r in results}
