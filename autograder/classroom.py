"""Students' GitHub repositories: the plain GitHub Actions workflow that grades them on every
push (`autograder.actions` does the grading), the per-question results in the format of the
discontinued GitHub Classroom's reporter (still read by some Actions-based tools), and the check
that a cloned repository still carries the original workflow and tests.

The reporter format: for each runner id, base64 of `{"version": 1, "status", "max_score",
"tests": [{"name", "status", "score", "message", "test_code", "filename", "line_no",
"duration"}]}`, whose `tests[].score` sum to the points. Runner ids are letters and digits.
"""
from __future__ import annotations

import base64
import json
import os
import re
import stat
from pathlib import Path

import yaml

from .assignment import Assignment
from .course.import_shadows import shadowing_entries
from .project import TORCH_CPU_INDEX, torch_requirement
from .results import QuestionResult
from .status import CaseStatus, QuestionStatus
from .student_files import UnreadableSubmission, is_link, read_student_file

WORKFLOW_DIR = ".github/workflows"
WORKFLOW_PATH = f"{WORKFLOW_DIR}/classroom.yml"


def step_id(question_id: str) -> str:
    """Runner ids must be letters and digits only."""
    return re.sub(r"[^A-Za-z0-9]", "", question_id)


def runner_json(q: QuestionResult, filename: str) -> dict:
    def status(c) -> str:
        return "pass" if c.status == CaseStatus.PASSED else "error" if c.status in (
            CaseStatus.ERROR, CaseStatus.TIMEOUT, CaseStatus.MEMORY,
            CaseStatus.INTERNAL_ERROR) else "fail"

    tests = [{"name": f"{q.id}: {c.name}", "status": status(c), "score": c.score,
              "message": c.message if c.status != CaseStatus.PASSED else "passed",
              "test_code": c.description or c.name, "filename": filename, "line_no": 0,
              "duration": 0} for c in q.cases]
    overall = "pass" if q.status == QuestionStatus.PASSED else (
        "error" if any(t["status"] == "error" for t in tests) else "fail")
    return {"version": 1, "status": overall, "max_score": q.max_score, "tests": tests}


def encode_result(data: dict) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode()


# `python -I -c ISOLATED_MAIN GRADER_DIR ARGS...`: GRADER_DIR first on the path, then
# `autograder.actions` with ARGS (-I leaves the working directory and PYTHON* variables out).
ISOLATED_MAIN = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "from autograder.actions import main; sys.exit(main())")

VENV_PATH = "~/.grader-venv"          # for actions/cache, which expands `~`
VENV = '"$HOME/.grader-venv"'         # for the shell


def workflow(assignment: Assignment, *, assignment_dir: str, install: list[str]) -> dict:
    """A plain GitHub Actions workflow; `assignment_dir` is the assignment's folder inside the
    repository. One step grades every question in one process (`autograder.actions`), which
    writes its outputs and the run's summary from Python. The grader's environment is cached
    whole (restored in seconds on a warm push); pip's cache serves a cold one. `install` are
    pip commands (`pip install ...`), run in that environment when it is not restored."""
    python = f"{VENV[:-1]}/bin/python\""
    # Every Python here runs isolated (-I): the working directory is the student's checkout,
    # and without -I a `venv.py`, `pip/` or `secrets.py` committed there would be imported in
    # place of the real module (and could, say, plant a start-up hook in the cached venv).
    install_run = "\n".join(
        [f"if [ ! -x {python} ]; then", f"  python -I -m venv {VENV}"]
        + [f"  {python} -I -m {line}" for line in install] + ["fi"])
    top = assignment_dir.strip("/").split("/", 1)[0]
    # The grader's own folder holds only the engine and the assignment's data, copied out of
    # the checkout, and is the one folder put before the interpreter's own on the path; the
    # student's file is read from the checkout as data (graded in the sandbox), never imported.
    grade_run = "\n".join([
        'GRADER="${RUNNER_TEMP:?}/grader"',
        'rm -rf "$GRADER" && mkdir -p "$GRADER"',
        f'cp -R autograder "{top}" "$GRADER/"',
        f"{python} -I -c '{ISOLATED_MAIN}' \"$GRADER\" -a \"$GRADER/{assignment_dir}\" ."])
    steps: list[dict] = [
        {"name": "Check out", "uses": "actions/checkout@v4"},
        {"name": "Set up Python", "id": "python", "uses": "actions/setup-python@v5",
         "with": {"python-version": "3.11", "cache": "pip",
                  "cache-dependency-path": "requirements.txt"}},
        {"name": "Restore the grader's environment", "uses": "actions/cache@v4",
         "with": {"path": VENV_PATH,
                  "key": "grader-${{ runner.os }}-py${{ steps.python.outputs.python-version }}"
                         "-${{ hashFiles('requirements.txt') }}"}},
        {"name": "Install the grader", "run": install_run},
        {"name": "Grade", "id": "grade", "run": grade_run},
    ]
    return {
        "name": "Autograding",
        "on": ["push", "workflow_dispatch"],
        "permissions": {"contents": "read"},
        "jobs": {"grade": {
            "runs-on": "ubuntu-latest",
            "timeout-minutes": 15,
            "outputs": {"score": "${{ steps.grade.outputs.score }}",
                        "max-score": "${{ steps.grade.outputs.max-score }}"},
            "steps": steps}},
    }


def workflow_yaml(assignment: Assignment, *, assignment_dir: str,
                  install: list[str] | None = None) -> str:
    install = install or [
        "pip install --upgrade pip",
        f"pip install {torch_requirement()} --index-url {TORCH_CPU_INDEX}",
        "pip install numpy scipy otter-grader nbformat PyYAML",
    ]
    text = yaml.dump(workflow(assignment, assignment_dir=assignment_dir, install=install),
                     Dumper=_Dumper, sort_keys=False, width=120)
    return "# Generated by `autograder build`; edits are flagged when the class is graded.\n" + text


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (shell scripts) as literal blocks, as people write workflows."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar(
    "tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


MAX_FLAGS = 12   # per repository: enough to see what was done, not a list of thousands


def repository_flags(folder: Path, originals: dict[str, bytes]) -> list[str]:
    """What a student changed among the files shipped to them (`originals`, by path in the
    repository): a file that differs, is missing or is not a regular file, any file added
    in a folder the bundle ships whole (the workflows, the engine, the assignment's data), and
    any module or package added at the top that could shadow an import (`import_shadows`).
    Nothing is read through a link, and no file is read beyond its original's size."""
    flags = []
    for rel, content in sorted(originals.items()):
        try:
            mode = os.lstat(folder / rel).st_mode
        except OSError:
            flags.append(f"{rel} is missing")
            continue
        if not stat.S_ISREG(mode):
            flags.append(f"{rel} is not a regular file (a link?)")
            continue
        try:
            same = read_student_file(folder / rel, len(content)) == content
        except UnreadableSubmission:   # larger than the original, or replaced meanwhile
            same = False
        if not same:
            flags.append(f"{rel} differs from the original")
    for rel in sorted(added_files(folder, originals)):
        flags.append(f"{rel} was added")
    shipped_tops = {rel.split("/", 1)[0] for rel in originals}
    for entry, module in shadowing_entries(folder, shipped_tops):
        flags.append(f"{entry} was added at the top and could shadow the module `{module}` "
                     "(Python run in the repository would import it instead)")
    if len(flags) > MAX_FLAGS:
        flags = flags[:MAX_FLAGS - 1] + [f"... and {len(flags) - MAX_FLAGS + 1} more"]
    return flags


def added_files(folder: Path, originals: dict[str, bytes]) -> list[str]:
    """Entries (files, links, anything but folders) under the shipped folders that the
    bundle did not ship; caches (__pycache__, .pyc) aside. Links to folders are not entered."""
    watched = {WORKFLOW_DIR} | {rel.split("/", 1)[0] for rel in originals
                                if "/" in rel and not rel.startswith(".github/")}
    added = []
    for top in sorted(watched):
        start = folder / top
        if is_link(start):
            added.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            links = [d for d in dirnames if is_link(Path(dirpath) / d)]
            for name in filenames + links:
                rel = (Path(dirpath) / name).relative_to(folder).as_posix()
                if rel not in originals and not name.endswith((".pyc", ".pyo")):
                    added.append(rel)
    return added
