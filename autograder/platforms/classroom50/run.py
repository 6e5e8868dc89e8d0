"""Classroom 50: grade the student's checkout and write `result.json` and `release-body.md`.

Classroom 50's runner executes the teacher's `autograder.py` (made by `autograder build`, see
`platforms/classroom50/build.py`) in a checkout of the student's repository; that script makes sure the
dependencies are there and runs `python -m autograder.platforms.classroom50` from the bundle folder
(`CLASSROOM50_BUNDLE_DIR`). Here the student's file is graded with the sandboxed grader (so a
student's prints never mix with what this writes) and the result becomes:

* `result.json`, schema `classroom50/result/v1`: one `tests` row per question, its partial
  credit in whole points (the schema wants integers), plus the plain-text feedback as `output`.
  The runner stamps `owner`, `assignment_type`, `datetime` and `graded_at` itself; they are
  filled here from its environment too, so the file is valid on its own.
* `release-body.md`: per question the failing cases, what is wrong and the named mistake
  (students read it on the submission's Release), every student-made text escaped.

Both are written into the student's checkout by `platforms.outputs.replace_file`: a committed
link of either name is replaced, never written through.

Exit 0 whenever the submission was graded, whatever the student did (a missing or broken file
is a row of failures); non-zero only when the grader itself could not grade.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import sys
from pathlib import Path

from ...model.assignment import Assignment, AssignmentError, load_assignment
from ..checkout import grade_or_why_not
from ...model.safetext import shown_text
from ..outputs import replace_file
from ..public_only import LeftOut, graded_later, left_out, points_heading, row_name
from ...model.results import SubmissionResult
from ...model.status import QuestionStatus
from ...console.arguments import Parser, run_entry_point

SCHEMA = "classroom50/result/v1"
RESULT_FILE = "result.json"
RELEASE_BODY_FILE = "release-body.md"
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


def whole_points(score: float, max_score: float) -> tuple[int, int]:
    """(score, max) as whole points: the maximum rounded, the score rounded down (a student
    never gains from rounding) and never above the maximum."""
    top = max(0, round(max_score))
    return min(top, max(0, math.floor(score + 1e-9))), top


def commit_datetime(checkout: Path) -> str:
    """The checked-out commit's committer date in UTC (what the runner stamps too), else now.
    Read with the due-date reader's git, which runs nothing the repository configures."""
    from ...course.git_history import HistoryError, head_commit_time

    try:
        seconds = head_commit_time(checkout)
    except HistoryError:
        return dt.datetime.now(dt.timezone.utc).strftime(_STAMP)
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime(_STAMP)


def _env(name: str, fallback: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or fallback


def identity(checkout: Path) -> dict:
    """The result's identity fields, from the runner's environment (fallbacks for a local
    dry run keep every field non-empty, as the schema wants)."""
    commit = _env("COMMIT_URL", "local")
    submission = _env("SUBMISSION_TAG", "submit/local")
    if not submission.startswith("submit/"):
        submission = "submit/" + submission
    return {
        "schema": SCHEMA,
        "classroom": _env("CLASSROOM", "local"),
        "assignment": _env("ASSIGNMENT", "local"),
        "assignment_type": _env("ASSIGNMENT_TYPE", "individual"),
        "owner": _env("OWNER", _env("USERNAME", _env("GITHUB_ACTOR", "local"))),
        "submission": submission,
        "commit": commit,
        "release": _env("RELEASE_URL", commit),
        "review": _env("REVIEW_URL", commit),
        "datetime": commit_datetime(checkout),
        "graded_at": dt.datetime.now(dt.timezone.utc).strftime(_STAMP),
    }


def result_document(result: SubmissionResult, ident: dict, left: LeftOut | None = None
                    ) -> dict:
    """`result.json` for one graded submission: one row per question, whole points. From a
    public folder (`left`: the hidden cases it lacks) each row's name says it is the public
    cases, and what is graded later."""
    from ..gradescope.run import question_output
    from ...feedback.contract import results_json

    as_json = results_json("", [result])["submissions"][0]["questions"]
    tests = []
    for qid, q in result.questions.items():
        score, top = whole_points(q.score, q.max_score)
        tests.append({"test-name": row_name(qid, left),
                      "passed": q.status == QuestionStatus.PASSED,
                      "score": score, "max-score": top, "status": str(q.status),
                      "output": shown_text(question_output(as_json[qid], qid=qid))})
    for qid, a in result.written.items():   # graded by a person (never right after a push)
        score, top = whole_points(a.points, a.max_score)
        tests.append({"test-name": qid, "passed": a.points == a.max_score, "score": score,
                      "max-score": top, "status": a.status,
                      "output": shown_text("\n".join(a.feedback))})
    doc = dict(ident)
    doc["score"] = sum(t["score"] for t in tests)
    doc["max-score"] = sum(t["max-score"] for t in tests)
    doc["tests"] = tests
    return doc


def release_body(result: SubmissionResult, doc: dict, title: str,
                 left: LeftOut | None = None, later: str = "") -> str:
    """The Release's Markdown: the points, then the per-question feedback (escaped). From a
    public folder it says the points are the public cases'; `later` (`public_only.graded_later`)
    what is graded later and what the grade is out of."""
    from ...course.report import feedback_markdown

    head = [f"### {points_heading(title, doc['score'], doc['max-score'], left)}", ""]
    if later:
        head += [f"**{later}**", ""]
    head += ["| Question | Points | Status |", "|---|---|---|"]
    for qid, t in zip(result.questions, doc["tests"]):
        head.append(f"| {qid} | {t['score']} / {t['max-score']} | {t['status']} |")
    body = feedback_markdown(result, title,
                             total_label="Public cases" if left else "Total")
    # The feedback file's own title line names the file; the table above already says it.
    body = body.split("\n", 1)[1] if body.startswith("# ") else body
    return "\n".join(head) + "\n" + body.rstrip("\n") + "\n"


PROG = "python -m autograder.platforms.classroom50"


def main(argv: list[str] | None = None) -> int:
    """The command line's exit status; a user's mistake is one line on stderr."""
    return run_entry_point(_main, PROG, argv)


def _main(argv: list[str] | None) -> int:
    p = Parser(prog=PROG, description="Grade a student's checkout for Classroom 50.")
    # A folder only: these grade a student's checkout, whose own folders are never looked in.
    p.add_argument("-a", "--assignment", required=True, help="the assignment folder")
    p.add_argument("--checkout", default=".", help="the student's repository (default: here)")
    p.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "user", "rlimits"])
    args = p.parse_args(argv)
    from ...sandbox import protect_this_process

    protect_this_process()   # before anything of the assignment is read
    checkout = Path(args.checkout).resolve()
    if not checkout.is_dir():
        print(f"autograder: the checkout {args.checkout!r} is not a folder; nothing written",
              file=sys.stderr)
        return 2
    try:
        assignment = load_assignment(Path(args.assignment).resolve())
    except AssignmentError as e:
        print(f"autograder: {e}; nothing written", file=sys.stderr)
        return 2
    result, why_not = grade_or_why_not(assignment, checkout, sandbox=args.sandbox)
    if result is None:
        print(f"autograder: {why_not}; nothing written", file=sys.stderr)
        return 3
    left = left_out(assignment)
    later = graded_later(assignment)
    doc = result_document(result, identity(checkout), left)
    # The checkout is the student's: either name may be a committed link (see outputs).
    replace_file(checkout, RESULT_FILE, (json.dumps(doc, indent=2) + "\n").encode())
    replace_file(checkout, RELEASE_BODY_FILE,
                 release_body(result, doc, assignment.title, left, later).encode("utf-8"))
    cases = "every case" if _has_hidden(assignment) else "public cases only"
    print(f"{assignment.title}: {doc['score']}/{doc['max-score']} points ({cases})")
    if later:
        print(later)
    for qid, t in zip(result.questions, doc["tests"]):
        print(f"  {qid:<14} {t['score']}/{t['max-score']}  {t['status']}")
    return 0


def _has_hidden(assignment: Assignment) -> bool:
    from ..bundle import case_visibility

    return any(any(case_visibility(q.test_file.read_text()).values())
               for q in assignment.questions)
