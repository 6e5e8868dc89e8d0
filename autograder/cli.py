"""Command line: `autograder check`, `grade`, `snapshot` and `sandbox`."""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .assignment import ASSIGNMENTS_DIR, AssignmentError, load_assignment
from .limits import parse_cli_limits


def _assignment_for_file(path: Path, requested: str | None):
    if requested:
        return load_assignment(requested)
    if ASSIGNMENTS_DIR.is_dir():
        for d in sorted(ASSIGNMENTS_DIR.iterdir()):
            if (d / "assignment.toml").is_file():
                a = load_assignment(d.name)
                if Path(a.student_file).stem == path.stem:
                    return a
    return load_assignment("attention")


def cmd_check(args) -> int:
    from .feedback import submission_text
    from .grade import check_in_process

    path = Path(args.file)
    assignment = _assignment_for_file(path, args.assignment)
    if not path.exists():
        print(f"autograder: {path} not found; copy the template "
              f"({assignment.template.name}) and fill it in", file=sys.stderr)
        return 2
    result = check_in_process(assignment, path)
    print(f"{assignment.title}: public checks of {path}")
    print(submission_text(result, show_passed=args.verbose))
    passed = all(q.status == "passed" for q in result.questions.values())
    print("\nAll public checks pass. Hidden cases are graded after you submit." if passed else
          "\nSome checks fail: read the messages above, fix, and run again.")
    return 0 if passed else 1


def _protect_this_process() -> None:
    """Make /proc/<grader>/environ, mem and cmdline unreadable to other users' processes."""
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass


def cmd_grade(args) -> int:
    from .feedback import submission_text, summary_table
    from .grade import grade_submission
    from .results import results_json
    from .sandbox import Sandbox, SandboxError
    from .submissions import find_submissions

    _protect_this_process()
    assignment = load_assignment(args.assignment)
    limits = assignment.limits.override(parse_cli_limits(args.limit))
    files = find_submissions(args.paths)
    if not files:
        print("autograder: no .py or .ipynb submissions found", file=sys.stderr)
        return 2
    jobs = max(1, min(args.jobs or os.cpu_count() or 1, len(files)))
    results = [None] * len(files)
    local = threading.local()
    sandboxes = []
    lock = threading.Lock()

    def work(i: int) -> None:
        if not hasattr(local, "sandbox"):
            with lock:
                slot = len(sandboxes)
            local.sandbox = Sandbox(args.sandbox, slot=slot)
            with lock:
                sandboxes.append(local.sandbox)
        results[i] = grade_submission(assignment, files[i], local.sandbox, limits,
                                      questions=args.question or None)
        if args.verbose:
            print(f"graded {files[i]}: {results[i].score:g}/{results[i].max_score:g}",
                  file=sys.stderr)

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(work, range(len(files))))
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    finally:
        for s in sandboxes:
            s.close()
    qids = [q.id for q in assignment.questions if not args.question or q.id in args.question]
    print(summary_table(results, qids))
    if sandboxes:
        print(f"\nsandbox: {sandboxes[0].description}")
    if args.feedback:
        for r in results:
            print()
            print(submission_text(r))
    if args.json:
        Path(args.json).write_text(json.dumps(results_json(assignment.name, results), indent=2))
        print(f"wrote {args.json}")
    return 0


def cmd_snapshot(args) -> int:
    from . import cases
    from .runner import grade_functions

    assignment = load_assignment(args.assignment)
    ref = assignment.load_reference()
    env = {name: getattr(ref, name) for name in assignment.api}
    store: dict = {}
    with cases.recording(store):
        result = grade_functions(assignment, "reference", lambda q: env, include_hidden=False)
    bad = [q.id for q in result.questions.values() if q.status != "passed"]
    if bad:
        print(f"autograder: the reference fails public cases of {bad}", file=sys.stderr)
        return 1
    assignment.snapshot_dir.mkdir(exist_ok=True)
    for qid, entries in sorted(store.items()):
        path = assignment.snapshot_dir / f"{qid}.json"
        path.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
        print(f"wrote {path.relative_to(assignment.root.parent.parent)} ({len(entries)} cases)")
    return 0


def cmd_sandbox(args) -> int:
    from .sandbox import LEVEL_DESCRIPTIONS, Sandbox, SandboxError

    try:
        s = Sandbox(args.sandbox)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    print(f"level: {s.description}")
    print(f"per-worker PID namespace: {'yes' if s.pidns else 'no'}")
    s.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="autograder", description="Grade transformer exercises.")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="run the public checks on your file (students)")
    c.add_argument("file", nargs="?", default="attention.py")
    c.add_argument("-a", "--assignment")
    c.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    c.set_defaults(func=cmd_check)

    g = sub.add_parser("grade", help="grade submissions with every case, sandboxed")
    g.add_argument("-a", "--assignment", required=True)
    g.add_argument("paths", nargs="+", help="submission files (.py, .ipynb) or folders")
    g.add_argument("--json", help="write results as JSON to this file")
    g.add_argument("--feedback", action="store_true", help="print each submission's feedback")
    g.add_argument("--question", action="append", help="grade only this question (repeatable)")
    g.add_argument("--jobs", type=int, default=0, help="parallel workers (default: cores)")
    g.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "user", "rlimits"])
    g.add_argument("--limit", action="append", metavar="NAME=VALUE",
                   help="override a limit, e.g. question_seconds=5, memory_mb=2048")
    g.add_argument("-v", "--verbose", action="store_true")
    g.set_defaults(func=cmd_grade)

    s = sub.add_parser("snapshot", help="record public expected values from the reference")
    s.add_argument("-a", "--assignment", required=True)
    s.set_defaults(func=cmd_snapshot)

    b = sub.add_parser("sandbox", help="show which isolation level grading would use")
    b.add_argument("--sandbox", default="auto", choices=["auto", "namespaces", "user", "rlimits"])
    b.set_defaults(func=cmd_sandbox)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (AssignmentError, ValueError) as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
