"""Plain GitHub Actions: grade every question of the student's file in one process and report
to the workflow's files, never through stdout.

`python -m autograder.actions -a ASSIGNMENT_DIR FILE` (the step the generated workflow runs):

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
"""
from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from .assignment import load_assignment
from .checkout import grade_or_why_not
from .classroom import encode_result, runner_json, step_id
from .platforms.outputs import append_line_file
from .results import SubmissionResult
from .safetext import markdown_inline
from .status import QuestionStatus


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


def summary_markdown(result: SubmissionResult, title: str) -> str:
    """The run's summary: points per question and, for each that lost points, what is wrong."""
    from .render import render_question

    md = markdown_inline
    lines = [f"### {md(title)}: {result.score:g} / {result.max_score:g} points", "",
             "| Question | Points | Status | What is wrong |", "|---|---|---|---|"]
    for qid, q in result.questions.items():
        view = render_question(q, public_only=True)
        problems = []
        if view.not_attempted:
            problems = ["not implemented yet"] if view.is_stub else [md(t) for t in view.todo]
        for c in view.cases:
            if not c.passed:
                text = f"*{md(c.name)}*: {md(c.message)}"
                if c.hint:
                    text += f" (💡 {md(c.hint)})"
                problems.append(text)
        problems += [md(n) for n in view.notes]
        lines.append(f"| {md(qid)} | {view.score:g} / {view.max_score:g} | {view.status} | "
                     f"{'<br>'.join(problems) or '✅'} |")
    return "\n".join(lines) + "\n\n"


def log_feedback(result: SubmissionResult, title: str) -> None:
    """The feedback in the log, with workflow commands switched off around it."""
    from .feedback import submission_text

    token = secrets.token_hex(16)
    print(f"::stop-commands::{token}")
    print(f"{title}: {result.score:g}/{result.max_score:g} points")
    print(submission_text(result))
    print(f"::{token}::", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.actions",
                                description="Grade a repository's file in GitHub Actions.")
    p.add_argument("-a", "--assignment", required=True, help="the assignment folder")
    p.add_argument("checkout", nargs="?", default=".", help="the repository (default: here)")
    p.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "user", "rlimits"])
    args = p.parse_args(argv)
    from .sandbox import protect_this_process

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
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        append_line_file(Path(os.environ["GITHUB_STEP_SUMMARY"]),
                         summary_markdown(result, assignment.title))
    log_feedback(result, assignment.title)
    full = all(q.status == QuestionStatus.PASSED for q in result.questions.values())
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
