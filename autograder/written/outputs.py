"""A class run's files, with the hand grades: recorded when the class is graded, rewritten when
grades change.

`autograder grade --out R` records its command line in R (`R/.cache/grade-command.json`).
When graders change grades (the review page, a CSV import), the files of R are rewritten by
running that command again: every submission is in R's cache, so nothing is graded again
unless a file changed, and the one code path that writes grades.json, grades.csv, the
feedback, report.html and gradebook.csv writes them with the hand grades (`apply.py`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ..model.safetext import shown_path
from .render import waiting_line

COMMAND_FILE = Path(".cache") / "grade-command.json"
# Exit statuses of a grade run that wrote its files: 0; 2, some paths not found (their rows say
# so); 4, some rows need the instructor (`course.needs_instructor`).
WROTE_FILES = (0, 2, 4)
# Options not repeated when the files are rewritten: they act beyond the results folder.
NOT_REPEATED = ("--deliver",)
# Set by a platform that runs `autograder grade` where no results folder is kept (Gradescope's
# container), so that what the log advises about written answers fits where it is read.
PLATFORM_VARIABLE = "AUTOGRADER_PLATFORM"
ADVICE_WITHOUT_OUT = {
    "gradescope": ("; they are graded by hand after the deadline, not in this container: in "
                   "Gradescope's manual grading (the notebook's PDF), or on the downloaded "
                   "submissions with `autograder grade --out` and `autograder review` "
                   "(docs/platforms.md, Gradescope)"),
}


def after_grading(out: Path | None, assignment, graded: list, argv: list[str] | None
                  ) -> list[str]:
    """Put the stored hand grades into a class run's results (when it writes to `out`) and
    record its command; the lines the terminal shows about written answers."""
    if not assignment.written:
        return []
    results = [g.result for g in graded]
    if out is None:
        advice = ADVICE_WITHOUT_OUT.get(os.environ.get(PLATFORM_VARIABLE, ""),
                                        "; to grade them, write the results with --out FOLDER "
                                        f"and run `autograder review -a {assignment.name} "
                                        "FOLDER`")
        line = waiting_line(results, advice)
        return [line] if line else []
    from .apply import record_and_apply

    applied = record_and_apply(out, assignment, results)
    if argv:
        record_command(out, argv)
    lines = list(applied.warnings)
    if applied.sync.regrade:
        lines.append(f"{len(applied.sync.regrade)} written answer(s) changed since they were "
                     "graded: they wait for a grader again")
    line = waiting_line(results, f" (`autograder review -a {assignment.name} "
                                 f"{shown_path(out)}`)")
    if line:
        lines.append(line)
    elif applied.graded:
        lines.append(f"every written answer is graded ({applied.graded} by hand)")
    return lines


def record_command(out: Path, argv: list[str]) -> None:
    path = Path(out) / COMMAND_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"argv": list(argv), "cwd": os.getcwd()}, indent=1))
    os.replace(tmp, path)


def recorded_command(out: Path) -> dict | None:
    try:
        data = json.loads((Path(out) / COMMAND_FILE).read_text())
    except (OSError, ValueError):
        return None
    argv = data.get("argv") if isinstance(data, dict) else None
    if not isinstance(argv, list) or not argv or argv[0] != "grade" or \
            not all(isinstance(a, str) for a in argv) or not isinstance(data.get("cwd"), str):
        return None   # only a grade command is ever run again
    data["argv"] = [a for a in argv if a not in NOT_REPEATED]
    return data


def rewrite(out: Path, timeout: float = 3600) -> tuple[bool, str]:
    """Write R's files again with the current hand grades: (done?, what happened, in words)."""
    command = recorded_command(out)
    if command is None:
        return False, (f"{shown_path(out)} does not record the grade command that wrote it: "
                       "grade the class again with --out to write the files")
    if not Path(command["cwd"]).is_dir():
        return False, f"the folder the class was graded from is gone ({command['cwd']})"
    env = dict(os.environ, TQDM_DISABLE="1")
    try:
        run = subprocess.run([sys.executable, "-m", "autograder", *command["argv"]],
                             cwd=command["cwd"], env=env, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, "rewriting the files took too long"
    if run.returncode not in WROTE_FILES:
        tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
        return False, (f"`autograder {' '.join(command['argv'])}` failed (exit "
                       f"{run.returncode}): " + " / ".join(tail))
    return True, "grades.json, grades.csv, the feedback files and report.html are up to date"
