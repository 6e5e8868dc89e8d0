"""Grading a student's repository checkout on a CI runner (Classroom 50, GitHub Actions): which
file to grade, graded in the sandbox like every other submission, and whether the grader itself
failed (then nothing is reported as the student's grade)."""
from __future__ import annotations

import os
from pathlib import Path

from ..model.assignment import Assignment
from ..model.results import SubmissionResult
from ..model.status import CaseStatus, QuestionStatus


def choose_submission(assignment: Assignment, checkout: Path) -> Path:
    """The file to grade: the `.py` answer file, unless it is still the untouched template and
    the notebook is there (the student worked in the notebook)."""
    py = checkout / assignment.student_file
    nb = checkout / (Path(assignment.student_file).stem + ".ipynb")
    try:
        untouched = py.is_file() and not py.is_symlink() and \
            py.read_bytes() == assignment.template.read_bytes()
    except OSError:
        untouched = False
    if (untouched or not os.path.lexists(py)) and nb.is_file() and not nb.is_symlink():
        return nb
    return py


def grade_checkout(assignment: Assignment, checkout: Path, *, sandbox: str = "auto"
                   ) -> SubmissionResult:
    """The student's file graded in the sandbox, every case the bundle carries: a class of
    one, through the recipe every class run follows (`course/class_run.py`)."""
    from ..course.class_run import RunOptions, run_class
    from ..grading.runner import failed_everywhere

    path = choose_submission(assignment, checkout)
    if not os.path.lexists(path):
        return failed_everywhere(assignment, path.name, CaseStatus.ERROR,
                                 f"{path.name} not found in the repository",
                                 include_hidden=True)
    from ..written.render import for_ci

    run = run_class(assignment, [str(path)], RunOptions(jobs=1, sandbox=sandbox, progress=False))
    return for_ci(run.results[0])   # written answers: graded by hand later


def grade_or_why_not(assignment: Assignment, checkout: Path, *, sandbox: str = "auto"
                     ) -> tuple[SubmissionResult | None, str | None]:
    """(the graded result, None), or (None, why) when the grader itself could not grade: then
    the platform is told it failed rather than given a grade that is not the student's."""
    from ..sandbox.errors import SandboxError

    try:
        result = grade_checkout(assignment, checkout, sandbox=sandbox)
    except SandboxError as e:
        return None, f"cannot grade: {e}"
    failure = grader_failed(result)
    if failure:
        return None, f"the grader failed ({failure})"
    return result, None


def grader_failed(result: SubmissionResult) -> str | None:
    """Why the grader itself failed on this submission (not the student's doing), if it did."""
    for q in result.questions.values():
        if q.status == QuestionStatus.INTERNAL_ERROR:
            case = next((c for c in q.cases if c.status == CaseStatus.INTERNAL_ERROR), None)
            return f"{q.id}: {case.message if case else 'internal error'}"
    return None
