"""Jupyter and Colab: the student notebook made from the template (`build.py`, `python -m
autograder.platforms.notebook`; shipped in the student bundle) and the likely mistake named
under a failing `grader.check` (`hints.py`)."""
from __future__ import annotations

from ..registry import Platform

PLATFORM = Platform("notebook", "the student notebook (Jupyter, Colab)", rank=5,
                    runner="autograder.platforms.notebook")
