"""Plain GitHub Actions: grade every question of the student's file in one process and report
to the workflow's files, never through stdout.

`python -m autograder.platforms.actions -a ASSIGNMENT_DIR FILE` (the step the generated workflow runs):

* grades in the sandbox (one torch import for all questions; the student's prints are captured
  there and never reach this process's stdout);
* appends to `$GITHUB_OUTPUT`, written from Python: `score`, `max-score`, and per question an
  output named by its step id (letters and digits) holding base64 of the reporter's runner JSON
  (`{"version": 1, "status", "max_score", "tests": [...]}`), for tools that still read the
  autograding-grading-reporter format;
* appends a per-question table (points, status, what is wrong and the named mistake) to
  `$GITHUB_STEP_SUMMARY`, student-made text escaped;
* prints the feedback to the log between `::stop-commands::` markers, so no text in it can be
  taken for a workflow command.

The generated workflow runs this isolated (`python -I`, the grader's own copy of the engine
and assignment first on the path): nothing committed in the student's checkout is imported, and
their file is read as data and graded in the sandbox. The two files above are the runner's,
appended to without following a link in their place; nothing is written into the checkout.

Exit 0 when every public case passes, 1 when points are missing (the check shows red), 2 when
the grader itself failed.

`workflow_yaml` writes the workflow that runs this step on every push (`autograder build` puts
it in the student bundle as `.github/workflows/classroom.yml`).
"""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import yaml

from ...model.assignment import Assignment, load_assignment
from ..checkout import grade_or_why_not
from .reporter import encode_result, runner_json, step_id
from ..outputs import append_line_file
from ..public_only import LeftOut, graded_later, left_out, points_heading
from ...model.project import TORCH_CPU_INDEX, torch_requirement
from ...model.results import SubmissionResult
from ...model.safetext import markdown_inline, markdown_text
from ...model.status import QuestionStatus
from ...console.arguments import Parser, run_entry_point


WORKFLOW_DIR = ".github/workflows"
WORKFLOW_PATH = f"{WORKFLOW_DIR}/classroom.yml"
# `python -I -c ISOLATED_MAIN GRADER_DIR ARGS...`: GRADER_DIR first on the path, then
# `autograder.platforms.actions` with ARGS (-I leaves the working directory and PYTHON*
# variables out).
ISOLATED_MAIN = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
                 "from autograder.platforms.actions.run import main; sys.exit(main())")

# The majors Classroom 50's own autograde runner uses (foundation50/classroom50).
CHECKOUT = "actions/checkout@v7"
SETUP_PYTHON = "actions/setup-python@v7"

VENV_PATH = "~/.grader-venv"          # for actions/cache, which expands `~`
VENV = '"$HOME/.grader-venv"'         # for the shell


def workflow(assignment: Assignment, *, assignment_dir: str, install: list[str]) -> dict:
    """A plain GitHub Actions workflow; `assignment_dir` is the assignment's folder inside the
    repository. One step grades every question in one process (`autograder.platforms.actions`), which
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
        {"name": "Check out", "uses": CHECKOUT},
        {"name": "Set up Python", "id": "python", "uses": SETUP_PYTHON,
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


def outputs(result: SubmissionResult, filename: str) -> dict[str, str]:
    """{name: value} for `$GITHUB_OUTPUT`; every value on one line."""
    out = {"score": f"{result.score:g}", "max-score": f"{result.max_score:g}"}
    for qid, q in result.questions.items():
        out[step_id(qid)] = encode_result(runner_json(q, filename))
    return out


def write_outputs(path: Path, values: dict[str, str]) -> None:
    """Append `name=value` lines; names and values are checked to be single lines."""
    lines = []
    for name, value in values.items():
        if not name.replace("-", "").isalnum() or "\n" in value or "\r" in value:
            raise ValueError(f"output {name!r} would not be one line")
        lines.append(f"{name}={value}\n")
    append_line_file(path, "".join(lines))


def summary_markdown(result: SubmissionResult, title: str, left: LeftOut | None = None,
                     later: str = "") -> str:
    """The run's summary: points per question and, for each that lost points, what is wrong.
    From a public bundle (`left`: its hidden cases) it says these are the public cases;
    `later` (`public_only.graded_later`) what is graded later and what the grade is out of."""
    from ...feedback.render import render_question

    md = markdown_inline

    def text(t: str) -> str:      # the engine's messages, hints and notes: code as code
        return markdown_text(t, table=True)

    lines = [f"### {points_heading(md(title), result.score, result.max_score, left)}", ""]
    if later:
        lines += [f"**{md(later)}**", ""]
    lines += ["| Question | Points | Status | What is wrong |", "|---|---|---|---|"]
    nothing_wrong = "all public cases pass" if left else "✅"
    for qid, q in result.questions.items():
        view = render_question(q, public_only=True)
        problems = []
        if view.not_attempted:
            problems = ["not implemented yet"] if view.is_stub else [text(t) for t in view.todo]
        for c in view.cases:
            if not c.passed:
                line = f"*{md(c.name)}*: {text(c.message)}"
                if c.hint:
                    line += f" (💡 {text(c.hint)})"
                problems.append(line)
        problems += [text(n) for n in view.notes]
        lines.append(f"| {md(qid)} | {view.score:g} / {view.max_score:g} | {view.status} | "
                     f"{'<br>'.join(problems) or nothing_wrong} |")
    return "\n".join(lines) + "\n\n"


def log_feedback(result: SubmissionResult, title: str, left: LeftOut | None = None,
                 later: str = "") -> None:
    """The feedback in the log, with workflow commands switched off around it."""
    from ...feedback.terminal import submission_text

    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}")
    print(points_heading(title, result.score, result.max_score, left))
    if later:
        print(later)
    print(submission_text(result))
    print(f"::{token}::", flush=True)


PROG = "python -m autograder.platforms.actions"


def main(argv: list[str] | None = None) -> int:
    """The command line's exit status; a user's mistake is one line on stderr."""
    return run_entry_point(_main, PROG, argv)


def _main(argv: list[str] | None) -> int:
    p = Parser(prog=PROG, description="Grade a repository's file in GitHub Actions.")
    # A folder only: these grade a student's checkout, whose own folders are never looked in.
    p.add_argument("-a", "--assignment", required=True, help="the assignment folder")
    p.add_argument("checkout", nargs="?", default=".", help="the repository (default: here)")
    p.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "user", "rlimits"])
    args = p.parse_args(argv)
    from ...sandbox import protect_this_process

    protect_this_process()   # before anything of the assignment is read
    assignment = load_assignment(Path(args.assignment).resolve())
    result, why_not = grade_or_why_not(assignment, Path(args.checkout).resolve(),
                                       sandbox=args.sandbox)
    if result is None:
        print(f"autograder: {why_not}", file=sys.stderr)
        return 2
    if os.environ.get("GITHUB_OUTPUT"):
        write_outputs(Path(os.environ["GITHUB_OUTPUT"]),
                      outputs(result, Path(result.path or assignment.student_file).name))
    left = left_out(assignment)
    later = graded_later(assignment)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        append_line_file(Path(os.environ["GITHUB_STEP_SUMMARY"]),
                         summary_markdown(result, assignment.title, left, later))
    log_feedback(result, assignment.title, left, later)
    full = all(q.status == QuestionStatus.PASSED for q in result.questions.values())
    return 0 if full else 1
