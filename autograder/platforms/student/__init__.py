"""The student bundle (`build.py`): the template `.py` and notebook, the engine and the public
cases, zipped; with its GitHub Actions workflow it is also a Classroom template repository.
Students run `python -m autograder check` in it."""
from __future__ import annotations

from ..registry import Platform


def _build(assignment, out, options):
    from .build import build_student

    return {"student": build_student(assignment, out),
            "student_zip": out / f"{assignment.name}-student.zip"}


PLATFORM = Platform("student", "the student bundle and template repository", rank=0,
                    build=_build)
