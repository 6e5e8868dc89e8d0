"""How the command line parses its arguments: every subcommand, its options and help, and
`main`, which runs the subcommand and turns a user's mistake into one line."""
from __future__ import annotations

import argparse
import sys

from ..console.arguments import Parser, add_assignment_argument, run_entry_point
from .commands import (cmd_benchmark, cmd_build, cmd_check, cmd_classroom, cmd_diagnose_eval,
                       cmd_grade, cmd_lint, cmd_mutants, cmd_new, cmd_sandbox,
                       cmd_similarity, cmd_snapshot)

# Where `autograder build` writes when no --out is given (ignored by git: .gitignore).
BUILD_DIR = "dist"


def version_text() -> str:
    """`autograder --version`: the package's version and the engine's (a hash of its files,
    as the result cache keys it: two copies of one engine say the same)."""
    from .. import __version__
    from ..model.project import engine_version

    return f"autograder {__version__} (engine {engine_version()})"


class _VersionAction(argparse.Action):
    """`--version`, computed only when asked (it hashes the engine's files)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0,
                         help="show the package's version and the engine's, and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


SANDBOX_LEVELS = ["auto", "namespaces", "user", "rlimits"]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="autograder", description="Grade transformer exercises: students run "
                                              "`check`, instructors `grade`, `build` and `lint`.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, about: str, func) -> argparse.ArgumentParser:
        """A subcommand: `about` is listed in `autograder --help` and heads its own --help."""
        parser = sub.add_parser(name, help=about, description=about[0].upper() + about[1:] + ".")
        parser.set_defaults(func=func)
        return parser

    c = command("check", "run the public checks on your file (students)", cmd_check)
    c.add_argument("file", nargs="?", help="your .py or .ipynb (default: the assignment's file)")
    add_assignment_argument(c, required=False)
    c.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")

    g = command("grade", "grade submissions with every case, sandboxed (instructors, CI)",
                cmd_grade)
    add_assignment_argument(g)
    g.add_argument("paths", nargs="+", help="submission files (.py, .ipynb) or folders")
    g.add_argument("--json", help="write results as JSON to this file")
    g.add_argument("--feedback", action="store_true", help="print each submission's feedback")
    g.add_argument("--question", action="append", help="grade only this question (repeatable)")
    g.add_argument("--jobs", type=int, default=0,
                   help="grading processes (default: one per core, at most one per 40 "
                        "submissions to grade)")
    g.add_argument("--sandbox", default="auto", choices=SANDBOX_LEVELS)
    g.add_argument("--limit", action="append", metavar="NAME=VALUE",
                   help="override a limit, e.g. question_seconds=5, memory_mb=2048")
    g.add_argument("--out", help="write grades.csv, grades.json, report.html and feedback/ "
                                 "here; results are cached there, so a rerun resumes")
    g.add_argument("--public-only", action="store_true", help="run only the public cases")
    g.add_argument("--roster", help="class roster: a CSV with identifier and github_username "
                                    "columns, or a Gradescope export's submission_metadata.yml; "
                                    "adds the identifier and writes gradebook.csv")
    g.add_argument("--due", help="due time, ISO 8601 with a zone (2026-12-01T23:59:00+01:00): "
                                 "grade each git repository's last commit at or before it")
    g.add_argument("--late-policy", help="accept late commits at a cost, e.g. 10%%/day,max=50%% "
                                         "(in adjusted_total; needs --due)")
    g.add_argument("--extensions", metavar="FILE",
                   help="CSV with columns student,due: that student's own due time (ISO 8601 "
                        "with a zone), from which the late policy counts; needs --due")
    g.add_argument("--overrides", metavar="FILE",
                   help="CSV with columns student,question,points,reason: after grading, set "
                        "that question's points (grades.json keeps the grader's too); the "
                        "student's feedback and report.html show the reason")
    g.add_argument("--deliver", action="store_true",
                   help="with --out: commit each student's feedback on a `feedback` branch of "
                        "their cloned repository (nothing pushed), write a Feedback pull "
                        "request comment per student, and with a roster's email column a "
                        "mail-merge CSV; nothing is sent")
    g.add_argument("--similarity", action="store_true",
                   help="also compare the submissions (as `autograder similarity`) and list the "
                        "most similar pairs in report.html, for the instructor; no score changes")
    g.add_argument("--share-torch", action="store_true",
                   help="fork the sandbox's fork server from the grading process once torch is "
                        "imported, before anything secret is read, so both share torch's "
                        "memory (user and rlimits levels; used on Gradescope)")

    y = command("similarity", "which submissions share code (renamed, reordered or "
                              "reformatted): similarity.json and .html, for the instructor; "
                              "never changes a grade", cmd_similarity)
    add_assignment_argument(y)
    y.add_argument("paths", nargs="+", help="submission files (.py, .ipynb) or folders, as for "
                                            "grade")
    y.add_argument("--out", required=True, help="write similarity.json and similarity.html here")
    _similarity_options(y)

    r = command("classroom", "one question's public cases in the runner format of GitHub "
                             "Classroom's reporter (for tools that read it; the generated "
                             "workflow runs autograder.platforms.actions)", cmd_classroom)
    add_assignment_argument(r)
    r.add_argument("file", help="the student's .py or .ipynb")
    r.add_argument("--question", required=True, help="the question's id")

    m = command("benchmark", "measure grading speed and memory against otter", cmd_benchmark)
    add_assignment_argument(m, default="attention")
    m.add_argument("--corpus", default="tests/submissions",
                   help="folder of subfolders (correct/, wrong/, broken/) of submissions")
    m.add_argument("--n", type=int, default=200, help="class size")
    m.add_argument("--jobs", type=int, default=0)
    m.add_argument("--otter-sample", type=int, default=3)
    m.add_argument("--repeats", type=int, default=5,
                   help="timings of `check` and of `import torch` to take the median of")
    m.add_argument("--class-runs", type=int, default=3,
                   help="runs of the class (and of the small class of the fixed cost) to take "
                        "the median of")
    m.add_argument("--gradescope-limit", type=int, default=0, metavar="MIB",
                   help="also grade a correct submission holding a 400 MB tensor under this "
                        "container memory limit (Gradescope's default: 768)")
    m.add_argument("--similarity", action="store_true",
                   help="measure only `autograder similarity` on a class of --n submissions "
                        "mixed from the corpus's functions, with planted copies")

    s = command("snapshot", "record public expected values from the reference", cmd_snapshot)
    add_assignment_argument(s)

    n = command("lint", "find authoring mistakes in an assignment (file, line, fix)", cmd_lint)
    add_assignment_argument(n)
    n.add_argument("--no-reference", action="store_true",
                   help="do not run the reference (snapshots are only checked to exist)")
    n.add_argument("--mutants", action="store_true",
                   help="also grade mistakes derived from the reference (as `autograder "
                        "mutants`) and report those no case catches (minutes)")

    u = command("mutants", "derive mistakes from the reference's code and grade each: which no "
                           "case catches, which only hidden cases catch, which the catalogue "
                           "does not name (minutes)", cmd_mutants)
    add_assignment_argument(u)
    u.add_argument("--jobs", type=int, default=0,
                   help="worker processes (default: one per core, at most 4)")
    u.add_argument("--seconds", type=float, default=None,
                   help="each mutant's time limit (default: the assignment's "
                        "submission_seconds)")
    u.add_argument("--function", action="append",
                   help="mutate only this function of the reference (repeatable)")
    u.add_argument("--json", help="write every mutant's result as JSON to this file")
    u.add_argument("-v", "--verbose", action="store_true",
                   help="also list equivalent and named mutants, and print the catalogue "
                        "variant that would name each unnamed one")

    e = command("new", "start a new assignment: the template, the reference, assignment.toml, "
                       "a question file, a catalogue and the notebook, linting clean", cmd_new)
    e.add_argument("name", help="the assignment's name, also its student file's (NAME.py)")
    e.add_argument("--track", choices=["torch", "numpy"], default="torch",
                   help="what the functions take and return (default: torch)")
    e.add_argument("--title", help="shown to students (default: from the name)")
    e.add_argument("--project", default=".",
                   help="the project folder that holds assignments/, reference/ and "
                        "student_template/ (default: the current folder)")

    o = command("build", "build the student bundle, the Gradescope zip, the Classroom 50 "
                         "folder and the otter zip", cmd_build)
    add_assignment_argument(o)
    o.add_argument("--out", default=BUILD_DIR,
                   help=f"folder to write them to (default: {BUILD_DIR}, in the current folder)")
    o.add_argument("--no-otter", action="store_true", help="skip the otter-grader zip")
    o.add_argument("--classroom50-hidden", action="store_true",
                   help="put the hidden cases (and the reference) in the Classroom 50 folder, "
                        "which is publicly downloadable")

    d = command("diagnose-eval", "measure how often feedback names the right known mistake "
                                 "on a corpus of submissions", cmd_diagnose_eval)
    add_assignment_argument(d)
    d.add_argument("--corpus", default="tests/submissions",
                   help="folder with wrong/ (each with a `# diagnosis: ID` header) and correct/")
    d.add_argument("--sandbox", default="auto", choices=SANDBOX_LEVELS)
    d.add_argument("-v", "--verbose", action="store_true", help="list every submission")

    from ..written.cli import add_arguments as review_arguments, cmd_review

    w = command("review", "grade the written answers of a class run by hand: a local page "
                          "for several graders, or a CSV to export and import", cmd_review)
    add_assignment_argument(w)
    review_arguments(w)

    b = command("sandbox", "show which isolation level grading would use", cmd_sandbox)
    b.add_argument("--sandbox", default="auto", choices=SANDBOX_LEVELS)
    return p


def _similarity_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--top", type=int, default=20, help="pairs shown side by side (default 20)")
    p.add_argument("--min-score", type=float, default=0.2,
                   help="pairs listed in similarity.json score at least this (default 0.2)")
    p.add_argument("--max-pairs", type=int, default=1000,
                   help="at most this many pairs in similarity.json (default 1000)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # a class run is replayed
    return run_entry_point(lambda _: args.func(args), "autograder")
