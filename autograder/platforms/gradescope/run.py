"""Gradescope: grade `/autograder/submission` and write `/autograder/results/results.json`.

`run_autograder` (made by `autograder build`) calls `python -m autograder.platforms.gradescope`, which
picks the submitted file, grades it with this project's sandboxed `autograder grade --json` in a
child process, and converts that JSON to Gradescope's format (`to_gradescope`):

* top-level `score` (the submission's total) and `output` (problems with the submission, and a
  summary of the public cases while the per-question details are not yet visible);
* `tests`: one entry per question (`name` = question id, `score`, `max_score`, `status`
  passed/failed, `output` = every case's feedback, `output_format`, `visibility`). A question
  with hidden cases gets the visibility `[gradescope] hidden_visibility` of assignment.toml
  (default `after_published`); a question with only public cases is `visible`.

The root of the layout (source/, submission/, results/) is `--root`, else `$GRADESCOPE_ROOT`,
else `/autograder`, so a test can run it against a temporary folder shaped like Gradescope's.
Whatever happens, a results.json is written.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...model.assignment import Assignment, load_assignment
from ...course.needs_instructor import NEEDS_INSTRUCTOR
from ..outputs import replace_file
from ...model.project import PROJECT_ROOT
from ...intake.student_files import Pick, pick_file
from ...feedback.render import render_question
from ...feedback.totals import Totals, out_of
from ...model.results import question_from_json
from ...model.status import QuestionStatus
from ...model.written_answer import WrittenAnswer, is_written
from ...written.outputs import PLATFORM_VARIABLE
from ...written.render import ci_lines, graded_by_hand
from ...model.safetext import shown_path, shown_text
from ...console.arguments import Parser, add_assignment_argument, run_entry_point

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULT_HIDDEN_VISIBILITY = "after_published"


def hidden_visibility(assignment: Assignment) -> str:
    value = assignment.config.get("gradescope", {}).get("hidden_visibility",
                                                        DEFAULT_HIDDEN_VISIBILITY)
    if value not in VISIBILITIES:
        raise ValueError(f"[gradescope] hidden_visibility must be one of {', '.join(VISIBILITIES)}")
    return value


# ------------------------------------------------------------------ the conversion

def _num(x: float) -> str:
    return f"{x:g}"


def question_output(q: dict, *, qid: str = "", public_only: bool = False) -> str:
    """A question's feedback as Gradescope text, from the one case renderer: a line per case,
    under each failing one its message and the named mistake's hint, as in the terminal."""
    view = render_question(question_from_json(qid, q), public_only=public_only)
    lines = [f"{_num(view.score)}/{_num(view.max_score)} ({view.status})"]
    if view.not_attempted and not public_only:
        return "\n".join(lines + view.todo + view.notes)
    for c in view.cases:
        mark = "pass" if c.passed else "FAIL"
        lines.append(f"[{mark}] {c.tag} '{c.name}' ({_num(c.points)} pt)")
        if c.passed:
            continue
        if c.message:
            lines.append(f"       {c.first_line}")
        lines += c.tail_lines(" " * 11, " " * 7, " " * 7)
    if not view.cases and q.get("feedback"):
        lines.append(q["feedback"])
    return "\n".join(lines + view.notes)


def to_gradescope(submission: dict, *, visibility: str = DEFAULT_HIDDEN_VISIBILITY,
                  extra_notes: list[str] = ()) -> dict:
    """Gradescope's results.json for one submission of `autograder grade --json`."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"unknown visibility {visibility!r}")
    tests, delayed = [], []
    written = {qid: WrittenAnswer.from_json(qid, q)
               for qid, q in submission.get("questions", {}).items() if is_written(q)}
    for qid, q in submission.get("questions", {}).items():
        if is_written(q):
            continue
        has_hidden = any(c.get("hidden") for c in q.get("cases", []))
        vis = visibility if has_hidden else "visible"
        if vis != "visible":
            delayed.append((qid, q))
        tests.append({
            "name": qid,
            "score": float(q["score"]),
            "max_score": float(q["max_score"]),
            "status": "passed" if q["status"] == QuestionStatus.PASSED else "failed",
            "output": question_output(q, qid=qid),
            "output_format": "text",
            "visibility": vis,
        })
    decided = graded_by_hand(written)
    for qid, a in decided.items():   # graded by a person before this conversion: they count
        tests.append({"name": qid, "score": float(a.points), "max_score": float(a.max_score),
                      "status": "passed" if a.points == a.max_score else "failed",
                      "output": "\n".join([f"{a.points:g}/{a.max_score:g} (graded by hand)",
                                           *a.feedback]),
                      "output_format": "text", "visibility": visibility})
    # What the grade is out of, never a score: the total stays hidden until published.
    totals = Totals.of_json(submission)
    out: list[str] = [f"Graded {Path(submission.get('path', '')).name}. The grade is out of "
                      f"{out_of(totals.autograded_max, totals.written_max)}."]
    if submission.get("error"):
        out.append(f"Problem: {submission['error']}")
    out += ci_lines({k: a for k, a in written.items() if k not in decided})
    out += list(extra_notes) + list(submission.get("notes", []))
    if delayed:
        when = {"hidden": "are not shown", "after_due_date": "appear after the due date",
                "after_published": "appear when grades are published"}[visibility]
        out.append(f"\nPublic cases (the full results per question, hidden cases included, "
                   f"{when}):")
        for qid, q in delayed:
            view = render_question(question_from_json(qid, q), public_only=True)
            passed = sum(c.passed for c in view.cases)     # only failing cases fold
            total = len(view.cases) + sum(c.repeats for c in view.cases)
            out.append(f"\n{qid}: {passed}/{total} public cases pass")
            for c in view.failing:
                out.append(f"  {c.tag} '{c.name}': {c.first_line}")
                out += c.tail_lines(" " * 6, " " * 4, " " * 4)
    return _shown({
        "score": round(float(sum(t["score"] for t in tests)), 6),
        "output": "\n".join(out),
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
    })


def _shown(results: dict) -> dict:
    """Every text Gradescope shows the student with control and format characters as codes
    (`safetext.shown_text`): a message or answer from the student cannot reorder or hide
    what the page says."""
    for entry in [results, *results.get("tests", [])]:
        for key in ("output", "name"):
            if isinstance(entry.get(key), str):
                entry[key] = shown_text(entry[key])
    return results


def failure_results(message: str, assignment: Assignment | None = None) -> dict:
    """results.json when nothing could be graded: score 0 and a message, never a crash."""
    tests = []
    if assignment is not None:
        from ...grading.runner import load_question_file

        for q in assignment.questions:
            try:
                max_score = float(sum(tc.points or 0 for tc in
                                      load_question_file(str(q.test_file)).test_cases))
            except Exception:  # noqa: BLE001 - a broken question file must not lose the row
                max_score = 0.0
            tests.append({"name": q.id, "score": 0.0, "max_score": max_score,
                          "status": "failed", "output": message, "output_format": "text",
                          "visibility": "visible"})
    return _shown({"score": 0.0, "output": message, "output_format": "text",
                   "stdout_visibility": "hidden", "tests": tests})


# ------------------------------------------------------------------ the run

def pick_submission(folder: Path, student_file: str) -> tuple[Path | None, list[str]]:
    """The file to grade among those submitted, and notes (or the reason there is none).
    Several files and none with the expected name: the student is asked to rename one."""
    pick = pick_file(folder, student_file, ambiguous="refuse") if folder.is_dir() else Pick(None)
    stem = Path(student_file).stem
    if pick.ambiguous:
        names = ", ".join(f.name for f in pick.others)
        return None, [f"Several files were submitted ({names}) and none is named {student_file} "
                      f"or {stem}.ipynb: rename the one to grade."]
    if pick.file is None:
        return None, [f"No .py or .ipynb file was submitted: upload {student_file} or "
                      f"{stem}.ipynb."]
    others = [f.name for f in pick.others]
    return pick.file, [f"Also submitted, not graded: {', '.join(others)}."] if others else []


def run(root: Path, assignment_arg: str) -> dict:
    """Grade the submission under `root` and write root/results/results.json."""
    results_dir = root / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    try:
        assignment = load_assignment(assignment_arg)
        visibility = hidden_visibility(assignment)
    except Exception as e:  # noqa: BLE001 - a broken setup still writes a results.json
        return _write(results_dir, failure_results(f"The autograder is misconfigured ({e}); "
                                                   "tell your instructor."))
    try:
        return _grade(root, results_dir, assignment, visibility)
    except Exception as e:  # noqa: BLE001 - whatever fails, the student gets a results.json
        print(f"autograder.platforms.gradescope: {type(e).__name__}: {e}", file=sys.stderr)
        return _write(results_dir, failure_results(
            "The autograder failed while grading this submission (an error of the grader, "
            "not of your code); tell your instructor.", assignment))


KILLED_MESSAGE = ("The grader was killed (SIGKILL) before it finished: most likely the container "
                  "ran out of memory. If your code keeps very large tensors, free them; "
                  "otherwise tell your instructor.")


def _grade(root: Path, results_dir: Path, assignment: Assignment, visibility: str) -> dict:
    path, notes = pick_submission(root / "submission", assignment.student_file)
    if path is None:
        return _write(results_dir, failure_results("\n".join(notes), assignment))
    engine_root = PROJECT_ROOT   # the folder holding the `autograder` package
    with tempfile.TemporaryDirectory() as tmp:
        grade_json = Path(tmp) / "grade.json"
        # One torch for the grading process and the sandbox's fork server (forked from it),
        # which is what leaves room for the student in a 768 MB container; the grading
        # process's environment is the fork server's memory too, so it gets only what it needs.
        cmd = [sys.executable, "-m", "autograder", "grade", "-a", str(assignment.root),
               str(path), "--json", str(grade_json), "--feedback", "--share-torch",
               "--sandbox", os.environ.get("AUTOGRADER_SANDBOX", "auto")]
        timeout = assignment.limits.submission_seconds * 3 + 300
        env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "HOME", "TMPDIR")
               if k in os.environ}
        # Half a CPU: one thread each for the numerical libraries, and no thread pool running
        # when the fork server is forked (a fork keeps only the calling thread).
        env.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        # What the log advises about written answers fits a Gradescope container (`written.
        # outputs.after_grading`): no results folder to review there.
        env[PLATFORM_VARIABLE] = "gradescope"
        try:
            proc = subprocess.run(cmd, cwd=engine_root, capture_output=True, text=True,
                                  timeout=timeout, env={**env, "PYTHONPATH": str(engine_root)})
            print(proc.stdout)
            print(proc.stderr, file=sys.stderr)
        except subprocess.TimeoutExpired:
            return _write(results_dir, failure_results(
                "Grading took too long and was stopped; tell your instructor.", assignment))
        if proc.returncode == -signal.SIGKILL:
            return _write(results_dir, failure_results(KILLED_MESSAGE, assignment))
        # 0: graded; NEEDS_INSTRUCTOR: graded, and the row is flagged for the instructor (its
        # grade and flag are in the JSON). Anything else graded nothing.
        if proc.returncode not in (0, NEEDS_INSTRUCTOR) or not grade_json.is_file():
            return _write(results_dir, failure_results(
                "The autograder failed before it could grade this submission; tell your "
                "instructor.", assignment))
        data = json.loads(grade_json.read_text())
    submission = data["submissions"][0]
    return _write(results_dir, to_gradescope(submission, visibility=visibility,
                                             extra_notes=notes))


def _write(results_dir: Path, results: dict) -> dict:
    # Whole or not at all: run_autograder falls back on its own message when the file is absent
    # or unreadable (this process killed while writing, say).
    # (a temporary file of a fresh name, renamed over: nothing already there is written through)
    replace_file(results_dir, "results.json", json.dumps(results, indent=2).encode())
    return results


PROG = "python -m autograder.platforms.gradescope"


def main(argv: list[str] | None = None) -> int:
    """The command line's exit status; a user's mistake is one line on stderr."""
    return run_entry_point(_main, PROG, argv)


def _main(argv: list[str] | None) -> int:
    p = Parser(prog=PROG, description="Grade a Gradescope submission, or convert JSON.")
    add_assignment_argument(p)
    p.add_argument("--root", default=os.environ.get("GRADESCOPE_ROOT", "/autograder"),
                   help="folder holding source/, submission/, results/ (default: "
                        "$GRADESCOPE_ROOT or /autograder)")
    p.add_argument("--from-json", metavar="FILE",
                   help="only convert this `autograder grade --json` file (first submission)")
    p.add_argument("--out", metavar="FILE", help="with --from-json: where to write")
    args = p.parse_args(argv)
    if args.from_json:
        assignment = load_assignment(args.assignment)
        data = json.loads(Path(args.from_json).read_text())
        try:
            submission = data["submissions"][0]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"{shown_path(args.from_json)} holds no submission: give a file "
                             "written by `autograder grade --json`") from None
        results = to_gradescope(submission, visibility=hidden_visibility(assignment))
        text = json.dumps(results, indent=2)
        if args.out:
            Path(args.out).write_text(text)
        else:
            print(text)
        return 0
    if not Path(args.root).is_dir():   # Gradescope's always is: a local run's mistake
        raise ValueError(f"{shown_path(args.root)} is not a folder: give --root, the folder "
                         "holding submission/")
    results = run(Path(args.root), args.assignment)
    print(f"score: {results['score']:g}")
    return 0
