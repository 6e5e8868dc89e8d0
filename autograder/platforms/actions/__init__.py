"""GitHub Actions: the workflow shipped in the student bundle's template repository and the
grading step it runs on every push (`run.py`, `python -m autograder.platforms.actions`), with
the old GitHub Classroom reporter's format (`reporter.py`)."""
from __future__ import annotations

from ..registry import Platform

PLATFORM = Platform("actions", "GitHub Actions in the student's repository", rank=4,
                    runner="autograder.platforms.actions")
