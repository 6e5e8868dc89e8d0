"""The tamper check of Classroom repositories covers the whole student bundle: the engine copy,
the assignment's data, requirements, README and any workflow added beside classroom.yml."""
import os

import pytest

from autograder.platforms.build import answer_files, shipped_files
from autograder.course.repository_flags import MAX_FLAGS, repository_flags
from autograder.platforms.actions.run import WORKFLOW_PATH


@pytest.fixture(scope="module")
def originals(assignment):
    return shipped_files(assignment)


@pytest.fixture
def repo(tmp_path, originals, assignment):
    """A student's clone of the bundle, answers filled in."""
    root = tmp_path / "repo"
    for rel, content in originals.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    for name in answer_files(assignment):
        (root / name).write_text("# my answers\n")
    (root / "autograder" / "__pycache__").mkdir(exist_ok=True)
    (root / "autograder" / "__pycache__" / "cli.cpython-311.pyc").write_bytes(b"\0")
    return root


def test_the_shipped_files_are_the_whole_bundle_but_the_answers(originals, assignment):
    assert WORKFLOW_PATH in originals
    assert "autograder/sandbox/worker.py" in originals and "autograder/grading/grade.py" in originals
    assert "requirements.txt" in originals
    assert any(rel.startswith("assignments/") and "/tests/" in rel for rel in originals)
    assert not set(answer_files(assignment)) & set(originals)


def test_an_untouched_clone_is_not_flagged(repo, originals):
    assert repository_flags(repo, originals) == []


@pytest.mark.parametrize("rel", ["autograder/sandbox/worker.py", "autograder/grading/runner.py",
                                 "requirements.txt"])
def test_a_changed_engine_or_requirements_file_is_flagged(repo, originals, rel):
    (repo / rel).write_bytes((repo / rel).read_bytes() + b"\n# always pass\n")
    assert repository_flags(repo, originals) == [f"{rel} differs from the original"]


def test_an_added_workflow_and_added_engine_modules_are_flagged(repo, originals):
    (repo / ".github" / "workflows" / "always-pass.yml").write_text("on: push\n")
    (repo / "autograder" / "sitecustomize.py").write_text("print('hi')\n")
    flags = repository_flags(repo, originals)
    assert flags == [".github/workflows/always-pass.yml was added",
                     "autograder/sitecustomize.py was added"]


def test_a_removed_workflow_or_a_link_in_its_place_is_flagged(repo, originals, tmp_path):
    (repo / WORKFLOW_PATH).unlink()
    assert repository_flags(repo, originals) == [f"{WORKFLOW_PATH} is missing"]
    (repo / WORKFLOW_PATH).symlink_to(tmp_path / "elsewhere.yml")
    assert repository_flags(repo, originals) == [f"{WORKFLOW_PATH} is not a regular file (a "
                                                 "link?)"]


def test_a_fifo_or_a_huge_file_in_place_of_a_shipped_file_does_not_hang(repo, originals):
    rel = "autograder/grading/grade.py"
    (repo / rel).unlink()
    os.mkfifo(repo / rel)
    assert repository_flags(repo, originals) == [f"{rel} is not a regular file (a link?)"]
    (repo / rel).unlink()
    with open(repo / rel, "wb") as f:
        f.truncate(2**30)
    assert repository_flags(repo, originals) == [f"{rel} differs from the original"]


def test_the_flags_of_one_repository_are_capped(repo, originals):
    for i in range(50):
        (repo / ".github" / "workflows" / f"w{i:02}.yml").write_text("on: push\n")
    flags = repository_flags(repo, originals)
    assert len(flags) == MAX_FLAGS and flags[-1] == f"... and {50 - MAX_FLAGS + 1} more"


def test_top_level_modules_that_could_shadow_an_import_are_flagged(repo, originals):
    """A `secrets.py` at the top shadows the standard module for any Python started in the
    checkout without -I; a package, a bytecode file and a start-up hook likewise."""
    (repo / "secrets.py").write_text("x = 1\n")
    (repo / "numpy").mkdir()
    (repo / "numpy" / "__init__.py").write_text("")
    (repo / "sitecustomize.pyc").write_bytes(b"\0")
    flags = repository_flags(repo, originals)
    assert flags == [
        "numpy was added at the top and could shadow the module `numpy` (Python run in the "
        "repository would import it instead)",
        "secrets.py was added at the top and could shadow the module `secrets` (Python run in "
        "the repository would import it instead)",
        "sitecustomize.pyc was added at the top and could shadow the module `sitecustomize` "
        "(Python run in the repository would import it instead)"]


def test_honest_helper_files_are_not_flagged(repo, originals):
    """Helpers that shadow nothing, a scratch test.py, a notes folder, data and plots."""
    (repo / "helpers.py").write_text("def f():\n    return 1\n")
    (repo / "plot_attention.py").write_text("import matplotlib\n")
    (repo / "test.py").write_text("import attention\n")
    (repo / "my_utils").mkdir()
    (repo / "my_utils" / "__init__.py").write_text("")
    (repo / "notes").mkdir()
    (repo / "notes" / "json.md").write_text("notes\n")
    (repo / "weights.npy").write_bytes(b"\0")
    (repo / "figure.png").write_bytes(b"\0")
    assert repository_flags(repo, originals) == []
