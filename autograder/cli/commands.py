"""The subcommands of `autograder`: `check`, `grade`, `build`, `lint`, `snapshot` and the rest.
Each runs its recipe and prints what it returned; `parser.py` reads the arguments."""
from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from ..model.assignment import load_assignment
from ..model.limits import parse_cli_limits
from ..model.status import CaseStatus, QuestionStatus
from ..model.safetext import shown_path, visible


def cmd_check(args) -> int:
    import gc

    import torch  # noqa: F401 - imported first, so that what follows can freeze it

    # torch's millions of objects live as long as the process: leave them out of the garbage
    # collector's full passes, which otherwise scan them all (tens of ms each, several a check).
    gc.freeze()
    from ..feedback.terminal import submission_text
    from ..grading.grade import check_in_process
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
            template_hint(assignment)
        print(f"autograder: {shown_path(path)} not found; {hint}", file=sys.stderr)
        return 2
    if _lint_failed(assignment.root, reference=False):
        return 2
    result = check_in_process(assignment, path)
    print(f"{assignment.title}: public checks of {visible(path)}")
    print(submission_text(result, show_passed=args.verbose, check=True))
    passed = all(q.status == QuestionStatus.PASSED for q in result.questions.values())
    print("\n".join(check_closing(assignment, result)))
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
    from ..model.assignment import find_assignment_root

    root = find_assignment_root(args.assignment)
    seen = None
    if args.mutants:
        from ..authoring.mutant_report import summary

        def seen(analysis) -> None:
            print(summary(analysis))
    if _lint_failed(root, reference=not args.no_reference, mutants=args.mutants,
                    mutants_seen=seen):
        return 1
    from ..authoring.paths import shown_assignment

    print(f"{shown_assignment(root)}: no authoring problems found")
    from ..authoring.forbidden_coverage import coverage

    print("\n".join(["forbidden routines, and where grading refuses them:", *coverage(root)]))
    return 0


def cmd_mutants(args) -> int:
    from ..authoring.mutant_report import command

    return command(args.assignment, jobs=args.jobs, seconds=args.seconds,
                   functions=args.function, json_path=args.json, verbose=args.verbose)


def _import_quietly(*names: str) -> None:
    import importlib

    try:
        for name in names:
            importlib.import_module(name)
    except ImportError:
        pass   # the report says so when it needs them


def cmd_grade(args) -> int:
    from ..course import class_run
    from ..sandbox import protect_this_process

    protect_this_process()
    if args.share_torch:
        from ..sandbox import shared_start

        shared_start.prepare()   # before numpy loads: no thread pool to keep the fork away
    assignment = load_assignment(args.assignment)
    limits = assignment.limits.override(parse_cli_limits(args.limit))
    out = Path(args.out) if args.out else None
    if args.similarity and out is None:
        print("autograder: --similarity adds a section to report.html: give --out too",
              file=sys.stderr)
        return 2
    if args.deliver and out is None:
        print("autograder: --deliver writes beside the reports: give --out too", file=sys.stderr)
        return 2
    bundle = None
    # Folders may be repositories made from the student bundle: its own files are no "also
    # found" note. Building it reads the question files, so not with --share-torch, whose
    # fork server must be forked from a process that has read nothing private.
    if not args.share_torch and any(os.path.isdir(p) for p in args.paths):
        bundle = _BundleFiles(assignment)
    options = class_run.RunOptions(
        out=out, jobs=args.jobs or None, sandbox=args.sandbox, limits=limits,
        questions=args.question or None, public_only=args.public_only,
        share_torch=args.share_torch, roster=args.roster, due=args.due,
        late_policy=args.late_policy, extensions=args.extensions, overrides=args.overrides,
        similarity=args.similarity, deliver=args.deliver,
        json_path=Path(args.json) if args.json else None, argv=getattr(args, "argv", None),
        bundle=bundle, shipped=_shipped_files(assignment, bundle))
    try:
        run = class_run.prepare(assignment, args.paths, options)
    except class_run.RunRefused as e:
        first, *more = str(e).splitlines() or [""]
        print(f"autograder: {visible(first)}", file=sys.stderr)
        for line in more:   # one problem per line, each naming its row
            print(f"  {visible(line.strip())}", file=sys.stderr)
        return 2
    if not run.students:
        run.term.close()
        print("autograder: no submissions found", file=sys.stderr)
        return 2
    if out is not None:
        # The reports' libraries load while the grading processes work (this one waits).
        threading.Thread(target=_import_quietly, args=("jinja2",), daemon=True).start()
    from ..sandbox.errors import SandboxError

    try:
        class_run.run(run)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        kept = f"; the results so far are kept in {shown_path(out / '.cache')}: run the same " \
               "command again to go on" if out else ""
        print(f"\nautograder: interrupted{kept}", file=sys.stderr)
        return 130
    from .class_output import print_run

    return print_run(run, args)


class _BundleFiles(Mapping):
    """The student bundle's files ({path: content}), built on first use: only a student folder
    holding more than its answer file needs them, and building them (a fifth of a second)
    would otherwise delay every run's first grading process."""

    def __init__(self, assignment):
        self._assignment = assignment
        self._files: dict[str, bytes] | None = None

    def _built(self) -> dict[str, bytes]:
        if self._files is None:
            from ..platforms.build import bundle_files

            self._files = bundle_files(self._assignment)
        return self._files

    def __getitem__(self, path: str) -> bytes:
        return self._built()[path]

    def __iter__(self):
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


def _shipped_files(assignment, bundle):
    """What a student repository must keep as shipped, made when the run needs it."""
    def shipped() -> dict[str, bytes]:
        from ..platforms.build import shipped_files

        return shipped_files(assignment, bundle)
    return shipped


def cmd_similarity(args) -> int:
    """Which submissions share code: similarity.json and similarity.html in --out."""
    from ..course.similarity import compare_paths, template_files
    from ..course.similarity_report import write_similarity
    from ..model.safetext import visible

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
    from ..platforms.actions.reporter import encode_result, runner_json

    assignment = load_assignment(args.assignment)
    path = Path(args.file)
    result = None
    if path.exists():
        from ..grading.grade import check_in_process

        result = check_in_process(assignment, path, questions=[args.question])
    if result is None or args.question not in result.questions:
        from ..grading.runner import failed_everywhere

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
    from ..model.assignment import find_assignment_root
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
    from ..platforms.build import HIDDEN_WARNING, BuildError
    from ..platforms.registry import BuildOptions, build_all

    assignment = load_assignment(args.assignment)
    if _lint_failed(assignment.root):
        return 2
    if args.classroom50_hidden:
        print(f"autograder: warning: {HIDDEN_WARNING}", file=sys.stderr)
    try:
        built = build_all(assignment, Path(args.out),
                          BuildOptions(otter=not args.no_otter,
                                       classroom50_hidden=args.classroom50_hidden))
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
    from ..model.project import PROJECT_ROOT
    from ..sandbox.errors import SandboxError
    from ..yardsticks.bundle_check import compare_tracks
    from ..yardsticks.corpus_grading import CorpusGrades
    from ..yardsticks.evaluate import evaluate
    from ..yardsticks.realworld import evaluate_realworld

    assignment = load_assignment(args.assignment)
    corpus = Path(args.corpus)
    if not (corpus / "wrong").is_dir() and (PROJECT_ROOT / args.corpus / "wrong").is_dir():
        corpus = PROJECT_ROOT / args.corpus
    if not (corpus / "wrong").is_dir():
        print(f"autograder: {shown_path(corpus)} has no wrong/ folder of submissions",
              file=sys.stderr)
        return 2
    grades = CorpusGrades(corpus, assignment, args.sandbox)
    try:
        result = evaluate(corpus, lambda f: grades.grade(assignment.name, f))
        realworld = evaluate_realworld(corpus, grades.grade)
        # The same real-world files, checked from the student bundle alone (public cases).
        bundle = compare_tracks([(t, p) for t, p in grades.graded()
                                 if p.parent.name == "realworld"], grades.grade)
    except SandboxError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return 3
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
    from ..yardsticks.benchmark import run

    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"autograder: corpus folder {shown_path(corpus)} not found", file=sys.stderr)
        return 2
    if args.similarity:
        from ..yardsticks.similarity_benchmark import run as run_similarity

        return run_similarity(args.assignment, corpus, args.n)
    return run(args.assignment, corpus, args.n, args.jobs or os.cpu_count() or 1,
               args.otter_sample, repeats=max(1, args.repeats),
               class_runs=max(1, args.class_runs),
               gradescope_limit=args.gradescope_limit)


def check_closing(assignment, result) -> list[str]:
    """The lines `check` ends with: whether every public check passes, what the points leave
    for later and what the grade is out of (`feedback.totals.graded_later`), and the written
    questions still unanswered."""
    from ..feedback.totals import graded_later
    from ..platforms.public_only import assignment_points
    from ..written.render import unanswered

    passed = all(q.status == "passed" for q in result.questions.values())
    lines = ["", "All public checks pass." if passed else
             "Some checks fail: read the messages above, fix, and run again."]
    points = assignment_points(assignment)
    later = graded_later(points.hidden_cases, points.hidden, points.autograded, points.written)
    if later:
        lines.append(later.replace("the points here are feedback", "the points above are "
                                   "feedback"))
    empty = unanswered(result.written)
    if empty:   # said, never scored: a grader reads them after the submission
        lines.append(f"Written questions still unanswered: {', '.join(empty)} (graded by hand "
                     "after you submit).")
    return lines


def template_hint(assignment) -> str:
    """What `check` says when the student's file is not there: where the template is."""
    template = shown_path(assignment.template)
    return (f"copy the template and fill it in: `cp {template} {assignment.student_file}` "
            "(or give the path of your .py or .ipynb)")
