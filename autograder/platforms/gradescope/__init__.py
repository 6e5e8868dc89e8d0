"""Gradescope: the autograder zip (`build.py`), the run in Gradescope's container that grades
the submission and writes `results/results.json` (`run.py`, `python -m
autograder.platforms.gradescope`), and the lint of `[gradescope]` (`lint.py`)."""
from __future__ import annotations

from ..registry import Platform


def _build(assignment, out, options):
    from .build import build_gradescope

    return {"gradescope": build_gradescope(assignment, out)}


def _lint(toml_path, config, line_of):
    from .lint import gradescope_visibility

    return gradescope_visibility(toml_path, config, line_of)


PLATFORM = Platform("gradescope", "Gradescope's autograder zip", rank=1,
                    runner="autograder.platforms.gradescope", build=_build,
                    settings={"gradescope": {"hidden_visibility"}}, lint=_lint)
