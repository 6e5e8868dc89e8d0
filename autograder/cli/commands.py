"""The subcommands of `autograder`: `check`, `grade`, `build`, `lint`, `snapshot` and the rest."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from ..assignment import load_assignment
from ..sandbox.limits import parse_cli_limits
from ..status import CaseStatus, QuestionStatus
from ..safetext import shown_path, visible
from .arguments import Parser, add_assignment_argument, run_entry_point

# Where `autograder build` writes when no --out is given (ignored by git: .gitignore).
BUILD_DIR = "dist"


def cmd_check(args) -> int:
    from ..feedback import submission_text
    from ..grade import check_in_process
    from ..intake.track import assignment_for_file

    if args.file and not os.path.lexists(args.file):     # said before any assignment is chosen
        print(f"autograder: {shown_path(args.file)} not found; give the path of your .py or "
              ".ipynb", file=sys.stderr)
        return 2
    assignment = assignment_for_file(Path(args.file) if args.file else None, args.assignment)
    path = Path(args.file or assignment.student_file)
    if path.is_dir():
        inside = path / assignment.student_file
        hint = f"; did you mean `{shown_path(inside)}`?" if inside.is_file() else ""
        print(f"autograder: {shown_path(path)} is a folder: give the path of your .py or "
              f".ipynb file{hint}", file=sys.stderr)
        return 2
    if not path.exists():
        hint = "give the path of your .py or .ipynb" if args.file else \
            f"copy the template ({assignment.template.name}) and fill it in"
        print(f"autograder: {shown_path(path)} not found; {hint}", file=sys.stderr)
        return 2
    if _lint_failed(assignment.root, reference=False):
        return 2
    result = check_in_process(assignment, path)
    print(f"{assignment.title}: public checks of {path}")
    print(submission_text(result, show_passed=args.verbose, check=True))
    passed = all(q.status == QuestionStatus.PASSED for q in result.questions.values())
    print("\nAll public checks pass. Hidden cases are graded after you submit." if passed else
          "\nSome checks fail: read the messages above, fix, and run again.")
    from ..written.render import unanswered

    empty = unanswered(result.written)
    if empty:   # said, never scored: a grader reads them after the submission
        print(f"Written questions still unanswered: {', '.join(empty)} (graded by hand after "
              "you submit).")
    return 0 if passed else 1


def _lint_failed(root, **options) -> bool:
    """Print the assignment's authoring mistakes (`authoring/lint.py`); whether there were any."""
    from ..authoring.lint import lint, report
    from ..authoring.paths import shown_assignment

    errors = lint(root, **options)
    if errors:
        print(report(errors), file=sys.stderr)
        print(f"autograder: {len(errors)} authoring problem(s) in {shown_assignment(root)}; "
              "see `autograder lint`", file=sys.stderr)
    return bool(errors)


def cmd_lint(args) -> int:
    from ..assignment import find_assignment_root

    root = find_assignment_root(args.assignment)
    if _lint_failed(root, reference=not args.no_reference):
        return 1
    from ..authoring.paths import shown_assignment

    print(f"{shown_assignment(root)}: no authoring problems found")
    from ..authoring.forbidden_coverage import coverage

    print("\n".join(["forbidden routines, and where grading refuses them:", *coverage(root)]))
    return 0


def _import_quietly(*names: str) -> None:
    import importlib

    try:
        import matplotlib

        matplotlib.use("Agg")
        for name in names:
            importlib.import_module(name)
    except ImportError:
        pass   # the report says so when it needs them


def cmd_grade(args) -> int:
    from ..course.batch import grade_class, sandbox_description
    from ..course.classlist import discover, missing_paths
    from ..feedback import submission_text, summary_table
    from ..course.report import write_reports
    from ..sandbox.errors import SandboxError
    from ..results import results_json
    from ..sandbox import protect_this_process

    protect_this_process()
    if args.share_torch:
        from ..sandbox import shared_start

        shared_start.prepare()   # before numpy loads: no thread pool to keep the fork away
    assignment = load_assignment(args.assignment)
    limits = assignment.limits.override(parse_cli_limits(args.limit))
    bundle = None
    # Folders may be repositories made from the student bundle: its own files are no "also
    # found" note. Building it reads the question files, so not with --share-torch, whose
    # fork server must be forked from a process that has read nothing private.
    if not args.share_torch and any(os.path.isdir(p) for p in args.paths):
        from ..build import bundle_files

        bundle = bundle_files(assignment)
    students = discover(args.paths, assignment.student_file, bundle=bundle)
    missing = missing_paths(args.paths)   # each still gets its row (0 points, "not found")
    if not students:
        print("autograder: no submissions found", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else None
    if args.similarity and out is None:
        print("autograder: --similarity adds a section to report.html: give --out too",
              file=sys.stderr)
        return 2
    if args.deliver and out is None:
        print("autograder: --deliver writes beside the reports: give --out too", file=sys.stderr)
        return 2
    from ..course.decisions import DecisionError
    from ..course.gradebook import Term
    from ..course.roster import RosterError

    try:
        term = Term(assignment, students, roster=args.roster, due=args.due,
                    late_policy=args.late_policy, out=out, extensions=args.extensions)
        if args.overrides:
            term.load_overrides(args.overrides, args.public_only)
    except (RosterError, DecisionError) as e:
        first, *more = str(e).splitlines() or [""]
        print(f"autograder: {visible(first)}", file=sys.stderr)
        for line in more:   # one problem per line, each naming its row
            print(f"  {visible(line.strip())}", file=sys.stderr)
        return 2
    students = term.students
    if out is not None:
        # The reports' libraries load while the grading processes work (this one waits).
        threading.Thread(target=_import_quietly, args=("matplotlib.pyplot", "jinja2"),
                         daemon=True).start()
    try:
        graded = grade_class(assignment, students, out=out, jobs=args.jobs or None,
                             sandbox_level=args.sandbox, limits=limits,
                             questions=args.question or None, public_only=args.public_only,
                             share_torch=args.share_torch)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        term.close()
        kept = f"; the results so far are kept in {shown_path(out / '.cache')}: run the same " \
               "command again to go on" if out else ""
        print(f"\nautograder: interrupted{kept}", file=sys.stderr)
        return 130
    # Hand grades of written answers (review.sqlite in --out) count in every output below.
    from ..written.outputs import after_grading

    written = after_grading(out, assignment, graded, getattr(args, "argv", None))
    for line in term.apply_overrides(graded):
        print(f"autograder: {visible(line)}", file=sys.stderr)
    from ..course import needs_instructor
    from ..integrity import tamper_policy

    flags = repository_flags(assignment, graded, bundle)
    needs_instructor.flag_repositories(graded, flags, tamper_policy(assignment))
    extra = term.extra(graded)
    similar = None
    if args.similarity:
        from ..course.similarity_report import class_section

        similar = class_section(out, assignment, graded)   # before a due-date checkout goes
    term.close()
    results = [g.result for g in graded]
    qids = [q.id for q in assignment.questions if not args.question or q.id in args.question]
    standings = [term.standing(g) for g in graded]
    late_policy = term.late_policy_text()
    print(summary_table(results, qids, standings, late_policy))
    cached = sum(g.cached for g in graded)
    level = sandbox_description(graded)
    if level:
        print(f"\nsandbox: {level}")
    if cached:
        print(f"{cached} of {sum(g.student.file is not None for g in graded)} submissions "
              "unchanged since the last run (cached)")
    if args.feedback:
        for r in results:
            print()
            print(submission_text(r))
    if out:
        files = write_reports(out, assignment, results, flags, extra, similarity=similar,
                              standings=standings, late_policy=late_policy,
                              decisions=term.decisions(graded),
                              file_names=term.feedback_names(graded))
        print(f"wrote {shown_path(files['csv'])}, {shown_path(files['json'])}, "
              f"{shown_path(files['html'])} and {len(results)} feedback files (.md, and .html "
              f"for a browser) in {shown_path(files['feedback'])}")
        lms = term.write_lms(out, graded, extra)
        print(f"wrote {shown_path(lms)} (for the LMS gradebook import)")
        if args.deliver:
            _deliver(out, assignment, graded, files["feedback_files"], term)
    for line in term.summary():
        print(line)
    for line in written:
        print(line)
    if args.json:
        data = results_json(assignment.name, results)
        for row, more in zip(data["submissions"], extra or []):
            row.update(more)   # roster identifier, due-date columns
        Path(args.json).write_text(json.dumps(data, indent=2))
        print(f"wrote {shown_path(args.json)}")
    if missing:
        print(f"autograder: not found: {', '.join(shown_path(m) for m in missing)} (graded 0, "
              "with a row saying so)", file=sys.stderr)
        return 2
    attention = needs_instructor.summary(results, [more.get("status") for more in extra])
    if attention:
        print(f"autograder: {attention}", file=sys.stderr)
        return needs_instructor.NEEDS_INSTRUCTOR
    return 0


def _deliver(out: Path, assignment, graded, feedback_files, term) -> None:
    """`--deliver`: feedback commits, Feedback-PR comments, the mail-merge file (printed)."""
    from ..course.feedback_delivery import BRANCH, deliver

    done = deliver(out, assignment.title, graded, feedback_files, term.members,
                   term.graded_commits(), term.label)
    commits = done["commits"]
    made = [d for d in commits if d.status == "committed"]
    same = [d for d in commits if d.status == "unchanged"]
    print(f"feedback branch `{BRANCH}`: {len(made)} commit(s) made, {len(same)} unchanged, in "
          f"{len(commits)} repositories (push them: see docs/instructors.md)")
    for d in commits:
        if d.status == "skipped":
            print(f"  {visible(d.student)}: not written: {visible(d.detail)}")
    print(f"wrote {shown_path(done['comments'])} (one Feedback pull request comment per "
          "student)")
    if done["mail"] is not None:
        print(f"wrote {shown_path(done['mail'])} (email,subject,body_file)")
        if done["no_email"]:
            print(f"  no email in the roster for: "
                  + ", ".join(visible(n) for n in done["no_email"][:20]))


def repository_flags(assignment, graded, bundle=None) -> list[dict]:
    """Student repositories whose shipped files were changed (Classroom layout: a student
    folder holding the bundle's `.github/` or `autograder/`); `bundle`: the student bundle's
    files, when already built."""
    from ..build import shipped_files
    from ..course.repository_flags import repository_flags as check_repo

    folders = [g.student.folder for g in graded]
    if not any(f is not None and _is_repository(f) for f in folders):
        return []
    originals = shipped_files(assignment, bundle)
    flags = []
    for g in graded:
        folder = g.student.folder
        if folder is None or not _is_repository(folder):
            continue
        for why in check_repo(folder, originals):
            flags.append({"student": g.student.name, "why": why})
    return flags


def _is_repository(folder) -> bool:
    """A student's copy of the bundle (what Classroom clones): it holds the bundle's folders."""
    return any(os.path.lexists(folder / name) for name in (".github", "autograder"))





def cmd_similarity(args) -> int:
    """Which submissions share code: similarity.json and similarity.html in --out."""
    from ..course.similarity import compare_paths, template_files
    from ..course.similarity_report import write_similarity
    from ..safetext import visible

    assignment = load_assignment(args.assignment)
    comparison = compare_paths(assignment, args.paths, min_score=args.min_score,
                               max_pairs=args.max_pairs)
    if not comparison.sources and not comparison.skipped:
        print("autograder: no submissions found", file=sys.stderr)
        return 2
    files = write_similarity(Path(args.out), assignment, comparison, template_files(assignment),
                             args.top)
    from ..course.similarity_report import baseline_text, verdict

    copied = sum(1 for p in comparison.pairs if p.kind)
    print(f"{len(comparison.sources)} submissions compared, {len(comparison.skipped)} not "
          f"(see the report); {copied} copies, {len(comparison.pairs) - copied} other pairs "
          f"score {args.min_score:g} or more")
    print(baseline_text(comparison))
    for p in comparison.pairs[:5]:
        what = verdict(p)
        print(f"  {p.score:.2f}  {visible(p.a.student)}  {visible(p.b.student)}"
              + (f"  ({what})" if what else ""))
    print(f"wrote {shown_path(files['json'])} and {shown_path(files['html'])}")
    return 0


def cmd_classroom(args) -> int:
    """One question's public cases as GitHub Classroom runner output (`result=<base64>`)."""
    from ..platforms.github_classroom import encode_result, runner_json

    assignment = load_assignment(args.assignment)
    path = Path(args.file)
    result = None
    if path.exists():
        from ..grade import check_in_process

        result = check_in_process(assignment, path, questions=[args.question])
    if result is None or args.question not in result.questions:
        from ..runner import failed_everywhere

        result = failed_everywhere(assignment, str(path), CaseStatus.ERROR, f"{path} not found",
                                   include_hidden=False)
    data = runner_json(result.questions[args.question], path.name)
    print(f"result={encode_result(data)}")
    if not path.exists():
        # The result above says so (0 points); the step fails too, so CI shows it.
        print(f"autograder: {shown_path(path)} not found", file=sys.stderr)
        return 2
    return 0


def cmd_snapshot(args) -> int:
    """Record the public cases' expected values; files whose content is unchanged are left
    as they are (`authoring/snapshots.py`)."""
    from ..assignment import find_assignment_root
    from ..authoring.snapshots import record, write_snapshots

    if _lint_failed(find_assignment_root(args.assignment), snapshots=False):
        return 2
    assignment = load_assignment(args.assignment)
    recorded = record(assignment)
    if recorded.failing:
        print(f"autograder: the reference fails public cases of {recorded.failing}",
              file=sys.stderr)
        return 1
    for w in write_snapshots(assignment, recorded):
        print(f"{'wrote' if w.changed else 'unchanged'} {shown_path(w.path)} ({w.cases} cases)")
    from ..authoring.mistake_table import table_line, write_table

    line = table_line(assignment, *write_table(assignment))
    if line:
        print(line)
    return 0


def cmd_sandbox(args) -> int:
    from ..sandbox import Sandbox, SandboxError

    try:
        s = Sandbox(args.sandbox)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    print(f"level: {s.description}")
    print(f"per-worker PID namespace: {'yes' if s.pidns else 'no'}")
    print(f"memory bounded by: {s.memory}")
    print(f"processes: {s.processes}")
    if s.mechanisms.get("own_root"):
        print("file system: made by the fork server (system libraries, Python, the sandbox "
              "package only)")
    s.close()
    return 0


def cmd_build(args) -> int:
    """The student bundle, the Gradescope zip, the Classroom 50 folder and the otter zip."""
    from ..build import HIDDEN_WARNING, BuildError, build_all

    assignment = load_assignment(args.assignment)
    if _lint_failed(assignment.root):
        return 2
    if args.classroom50_hidden:
        print(f"autograder: warning: {HIDDEN_WARNING}", file=sys.stderr)
    try:
        built = build_all(assignment, Path(args.out), otter=not args.no_otter,
                          classroom50_hidden=args.classroom50_hidden)
    except BuildError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 2
    for kind, path in built.items():
        print(f"{kind:<12} {shown_path(path)}")
    return 0


def cmd_new(args) -> int:
    """A new assignment's files, ready to edit (`authoring/scaffold.py`)."""
    from ..authoring.scaffold import ScaffoldError, run

    try:
        lines = run(args.name, Path(args.project), args.track, args.title)
    except ScaffoldError as e:
        print(f"autograder: {visible(e)}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def cmd_diagnose_eval(args) -> int:
    """Grade the wrong and correct corpora; measure how often feedback names the right mistake."""
    from ..project import PROJECT_ROOT
    from ..diagnose import evaluate
    from ..grade import grade_submission
    from ..sandbox import Sandbox, SandboxError

    assignment = load_assignment(args.assignment)
    corpus = Path(args.corpus)
    if not (corpus / "wrong").is_dir() and (PROJECT_ROOT / args.corpus / "wrong").is_dir():
        corpus = PROJECT_ROOT / args.corpus
    if not (corpus / "wrong").is_dir():
        print(f"autograder: {shown_path(corpus)} has no wrong/ folder of submissions",
              file=sys.stderr)
        return 2
    try:
        sandbox = Sandbox(args.sandbox)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    from ..diagnose.realworld import evaluate_realworld
    tracks = {assignment.name: assignment}

    graded: dict = {}

    def grade_on(track: str, path: Path):
        if track not in tracks:
            tracks[track] = load_assignment(track)
        if (track, path) not in graded:
            graded[(track, path)] = grade_submission(tracks[track], path, sandbox)
        return graded[(track, path)]

    try:
        result = evaluate(corpus, lambda f: grade_submission(assignment, f, sandbox))
        realworld = evaluate_realworld(corpus, grade_on)
        from ..diagnose.bundle_check import compare_tracks
        # The same real-world files, checked from the student bundle alone (public cases).
        bundle = compare_tracks([(t, p) for t, p in graded
                                 if p.parent.name == "realworld"], grade_on)
    finally:
        sandbox.close()
    print(f"diagnosis of known mistakes, {assignment.name}, corpus {args.corpus}")
    print(result.report(verbose=args.verbose))
    if args.verbose and result.variant_errors:
        print("\nvariants that raised (expected for mistakes that crash; else a catalogue bug):")
        for (mistake, fn), err in sorted(result.variant_errors.items()):
            print(f"  {mistake} in {fn}: {err[:100]}")
    for figures in realworld.values():     # every track, whichever assignment was asked for
        print()
        print(figures.report(verbose=args.verbose))
    for figures in bundle.values():
        print()
        print(figures.report(verbose=args.verbose))
    return 0 if result.meets() and all(f.meets() for f in realworld.values()) \
        and all(f.meets() for f in bundle.values()) else 1


def cmd_benchmark(args) -> int:
    from ..course.benchmark import run

    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"autograder: corpus folder {shown_path(corpus)} not found", file=sys.stderr)
        return 2
    if args.similarity:
        from ..course.similarity_benchmark import run as run_similarity

        return run_similarity(args.assignment, corpus, args.n)
    return run(args.assignment, corpus, args.n, args.jobs or os.cpu_count() or 1,
               args.otter_sample, repeats=max(1, args.repeats),
               gradescope_limit=args.gradescope_limit)


def version_text() -> str:
    """`autograder --version`: the package's version and the engine's (a hash of its files,
    as the result cache keys it: two copies of one engine say the same)."""
    from .. import __version__
    from ..project import engine_version

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
