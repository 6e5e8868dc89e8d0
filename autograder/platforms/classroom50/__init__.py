"""Classroom 50: the teacher's autograder folder (`build.py`), its `autograder.py`
(`autograder_script.py`, copied by the build), and the grading of a student's checkout that
writes `result.json` and `release-body.md` (`run.py`, `python -m
autograder.platforms.classroom50`)."""
from __future__ import annotations

from ..registry import Platform


def _build(assignment, out, options):
    from .build import build_classroom50

    return {"classroom50": build_classroom50(assignment, out, hidden=options.classroom50_hidden)}


PLATFORM = Platform("classroom50", "Classroom 50's autograder folder", rank=2,
                    runner="autograder.platforms.classroom50", build=_build)
