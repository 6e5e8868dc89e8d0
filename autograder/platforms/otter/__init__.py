"""otter-grader: an autograder zip made with `otter generate` (`build.py`), for instructors who
already run otter; the question files are otter's own format, so it grades them as they are."""
from __future__ import annotations

from ..registry import Platform


def _build(assignment, out, options):
    if not options.otter:
        return {}
    from .build import build_otter

    return {"otter": build_otter(assignment, out)}


PLATFORM = Platform("otter", "otter-grader's autograder zip", rank=3, build=_build)
