"""One recipe for grading a class: a list of named stages that every entry point runs.

`autograder grade` runs it on a class, Gradescope runs `autograder grade` on one submission,
Classroom 50 and GitHub Actions run it on one checkout (`platforms/checkout.py`), and
`autograder diagnose-eval` on its corpus. A stage added here reaches all of them; a stage that
does not apply to a run (no `--out`, no roster) is skipped by its own condition, never by the
entry point.

Each stage reads what earlier stages handed on and returns its own output, which the recipe
keeps in the `ClassRun` field of the stage's name: the run is the stages' outputs, declared
here, in order. The caller prints from them; nothing here prints.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..model.assignment import Assignment
from ..model.limits import Limits
from ..model.results import SubmissionResult
from .batch import Graded
from .classlist import Student


class RunRefused(Exception):
    """The run cannot start (a roster, an overrides file or a due date that does not read):
    each line names its problem. Nothing was graded."""


@dataclass(frozen=True)
class RunOptions:
    """What the person (or the platform) running the class chose."""

    out: Path | None = None             # reports, feedback, gradebook, the result cache
    jobs: int | None = None             # grading processes (None: from the cores)
    sandbox: str = "auto"
    limits: Limits | None = None        # None: the assignment's
    questions: list[str] | None = None
    public_only: bool = False
    share_torch: bool = False
    progress: bool = True
    roster: str | None = None
    due: str | None = None
    late_policy: str | None = None
    extensions: str | None = None
    overrides: str | None = None
    similarity: bool = False            # a similarity section in report.html (needs `out`)
    deliver: bool = False               # feedback commits and messages (needs `out`)
    json_path: Path | None = None       # the JSON contract, anywhere
    argv: list[str] | None = None       # the command that made the run (kept with hand grades)
    # The student bundle's files (repositories made from it: its own files are not submissions).
    bundle: Mapping[str, bytes] | None = None
    # The bundle's files students must not change, by path: made only when a submission is a
    # repository (the entry point knows how: `platforms.student`).
    shipped: Callable[[], dict[str, bytes]] | None = None


@dataclass
class ClassRun:
    """A class run: what it was given, then each stage's output, in the order they run."""

    assignment: Assignment
    options: RunOptions
    students: list[Student]
    missing: list[str]                  # paths given that do not exist (each still a row)
    term: Any                           # course.gradebook.Term: roster, due dates, decisions
    # The stages' outputs.
    graded: list[Graded] = field(default_factory=list)
    hand_grades: list[str] = field(default_factory=list)        # lines about written answers
    overrides: list[str] = field(default_factory=list)          # lines about decisions applied
    repository_flags: list[dict] = field(default_factory=list)  # {"student", "why"}
    term_columns: list[dict] = field(default_factory=list)      # roster id, due-date columns
    similarity: Any = None              # the report's similarity section
    reports: dict[str, Any] = field(default_factory=dict)       # files written; grades.json's data
    gradebook: Path | None = None
    delivery: dict[str, Any] | None = None
    json: Path | None = None
    stages_run: list[str] = field(default_factory=list)

    @property
    def results(self) -> list[SubmissionResult]:
        return [g.result for g in self.graded]


@dataclass(frozen=True)
class Stage:
    name: str                                   # the ClassRun field its output goes to
    run: Callable[[ClassRun], Any]
    when: Callable[[ClassRun], bool] = lambda run: True


# ------------------------------------------------------------------ the stages

def _grade(run: ClassRun) -> list[Graded]:
    from .batch import grade_class

    o = run.options
    return grade_class(run.assignment, run.students, out=o.out, jobs=o.jobs,
                       sandbox_level=o.sandbox, limits=o.limits or run.assignment.limits,
                       questions=o.questions, public_only=o.public_only,
                       share_torch=o.share_torch, progress=o.progress)


def _hand_grades(run: ClassRun) -> list[str]:
    # Hand grades of written answers (review.sqlite in `out`) count in every output below.
    from ..written.outputs import after_grading

    return after_grading(run.options.out, run.assignment, run.graded, run.options.argv)


def _overrides(run: ClassRun) -> list[str]:
    return run.term.apply_overrides(run.graded)


def _repository_flags(run: ClassRun) -> list[dict]:
    from ..grading.integrity import tamper_policy
    from . import needs_instructor
    from .repository_flags import class_repository_flags

    flags = class_repository_flags(run.graded, run.options.shipped)
    needs_instructor.flag_repositories(run.graded, flags, tamper_policy(run.assignment))
    return flags


def _term_columns(run: ClassRun) -> list[dict]:
    return run.term.extra(run.graded)


def _similarity(run: ClassRun) -> Any:
    from .similarity_report import class_section

    # Before a due-date checkout goes (the term closes after this stage).
    return class_section(run.options.out, run.assignment, run.graded)


def _close_term(run: ClassRun) -> None:
    run.term.close()


def _reports(run: ClassRun) -> dict[str, Any]:
    from .report import write_reports

    term = run.term
    return write_reports(run.options.out, run.assignment, run.results, run.repository_flags,
                         run.term_columns, similarity=run.similarity,
                         standings=[term.standing(g) for g in run.graded],
                         late_policy=term.late_policy_text(),
                         decisions=term.decisions(run.graded),
                         file_names=term.feedback_names(run.graded))


def _gradebook(run: ClassRun) -> Path:
    return run.term.write_lms(run.options.out, run.graded, run.term_columns)


def _delivery(run: ClassRun) -> dict[str, Any]:
    from .feedback_delivery import deliver

    term = run.term
    return deliver(run.options.out, run.assignment.title, run.graded,
                   run.reports["feedback_files"], term.members, term.graded_commits(),
                   term.label)


def _json(run: ClassRun) -> Path:
    import json

    from ..feedback.contract import results_json

    text = None
    if "results" in run.reports:
        # grades.json's rows, made once: the same but for its repository flags (and, when
        # there are none, grades.json's very text, indented JSON being slow to make).
        data = {k: v for k, v in run.reports["results"].items() if k != "flags"}
        if "flags" not in run.reports["results"]:
            text = run.reports.get("results_text")
    else:
        data = results_json(run.assignment.name, run.results)
        for row, more in zip(data["submissions"], run.term_columns or []):
            row.update(more)   # roster identifier, due-date columns
    path = Path(run.options.json_path)
    path.write_text(text if text is not None else json.dumps(data, indent=2))
    return path


def _writes(run: ClassRun) -> bool:
    return run.options.out is not None


STAGES: list[Stage] = [
    Stage("graded", _grade),
    Stage("hand_grades", _hand_grades),
    Stage("overrides", _overrides),
    Stage("repository_flags", _repository_flags),
    Stage("term_columns", _term_columns),
    Stage("similarity", _similarity, when=lambda run: run.options.similarity and _writes(run)),
    Stage("close_term", _close_term),
    Stage("reports", _reports, when=_writes),
    Stage("gradebook", _gradebook, when=_writes),
    Stage("delivery", _delivery, when=lambda run: run.options.deliver and _writes(run)),
    Stage("json", _json, when=lambda run: run.options.json_path is not None),
]


# ------------------------------------------------------------------ the recipe

def prepare(assignment: Assignment, paths: list[str], options: RunOptions) -> ClassRun:
    """Who is in the class and the term's decisions, checked before anything is graded
    (`RunRefused` names every problem). Runs `run` next, or leave it (nothing was started but
    the term's due-date checkouts: `run.term.close()`)."""
    from .classlist import discover, missing_paths
    from .decisions import DecisionError
    from .gradebook import Term
    from .roster import RosterError

    students = discover(paths, assignment.student_file, bundle=options.bundle)
    try:
        term = Term(assignment, students, roster=options.roster, due=options.due,
                    late_policy=options.late_policy, out=options.out,
                    extensions=options.extensions)
        if options.overrides:
            term.load_overrides(options.overrides, options.public_only)
    except (RosterError, DecisionError) as e:
        raise RunRefused(str(e)) from e
    return ClassRun(assignment, options, term.students, missing_paths(paths), term)


def run(class_run: ClassRun, stages: list[Stage] | None = None) -> ClassRun:
    """Every stage in order, each output kept on the run. An interrupted run closes its term
    (due-date checkouts) and lets the interruption through."""
    try:
        for stage in STAGES if stages is None else stages:
            if stage.when(class_run):
                output = stage.run(class_run)
                if stage.name in _OUTPUT_FIELDS:
                    setattr(class_run, stage.name, output)
                class_run.stages_run.append(stage.name)
    except BaseException:
        class_run.term.close()
        raise
    return class_run


def run_class(assignment: Assignment, paths: list[str],
              options: RunOptions | None = None) -> ClassRun:
    """Prepare and run the whole recipe on `paths` (files or folders of submissions)."""
    return run(prepare(assignment, paths, options or RunOptions()))


_OUTPUT_FIELDS = {"graded", "hand_grades", "overrides", "repository_flags", "term_columns",
                  "similarity", "reports", "gradebook", "delivery", "json"}
