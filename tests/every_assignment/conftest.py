"""What the tests over every assignment share: `autograder grade`'s result for a submission,
graded once."""
from pathlib import Path

import pytest

from autograder.grading.grade import grade_submission
from autograder.model.assignment import load_assignment


@pytest.fixture(scope="session")
def graded(sandbox):
    """`graded(name, path, public_only=False)`: `autograder grade`'s result for a submission,
    with every case or the public ones only, graded once per test process."""
    done: dict = {}

    def get(name: str, path: Path, public_only: bool = False):
        key = (name, Path(path), public_only)
        if key not in done:
            done[key] = grade_submission(load_assignment(name), Path(path), sandbox,
                                         include_hidden=not public_only)
        return done[key]

    return get
