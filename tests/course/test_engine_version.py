"""The result cache key covers every engine file (subpackages too), and the project's pins and
paths are stated once."""
import shutil

import pytest

from helpers import ROOT

from autograder.course import batch

from autograder.model import project
from autograder.model.limits import Limits


@pytest.fixture
def engine_copy(tmp_path, monkeypatch):
    """A copy of the engine the cache key is computed from (the real tree is never edited)."""
    copy = tmp_path / "autograder"
    shutil.copytree(project.ENGINE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(project, "ENGINE_DIR", copy)
    batch._version_of.cache_clear()
    yield copy
    batch._version_of.cache_clear()


def key(assignment) -> str:
    batch._version_of.cache_clear()
    return batch.cache_key(assignment, b"print('submission')", Limits())


@pytest.mark.parametrize("rel", ["sandbox/worker.py", "sandbox/wire.py", "grading/grade.py",
                                 "course/templates"])
def test_a_change_anywhere_in_the_engine_changes_the_cache_key(assignment, engine_copy, rel):
    before = key(assignment)
    target = engine_copy / rel
    if target.is_dir():
        target = sorted(p for p in target.rglob("*") if p.is_file())[0]
    target.write_bytes(target.read_bytes() + b"\n# changed\n")
    assert key(assignment) != before


def test_a_new_subpackage_or_a_moved_module_changes_the_cache_key(assignment, engine_copy):
    before = key(assignment)
    (engine_copy / "newpackage").mkdir()
    (engine_copy / "newpackage" / "__init__.py").write_text('"""new"""\n')
    after_new = key(assignment)
    assert after_new != before
    (engine_copy / "sandbox" / "procfs.py").rename(engine_copy / "procfs.py")
    assert key(assignment) != after_new


def test_caches_do_not_change_the_key(assignment, engine_copy):
    before = key(assignment)
    (engine_copy / "sandbox" / "__pycache__").mkdir(exist_ok=True)
    (engine_copy / "sandbox" / "__pycache__" / "worker.cpython-311.pyc").write_bytes(b"\0")
    assert key(assignment) == before


def test_the_engine_files_are_those_the_bundles_ship(tmp_path):
    from autograder.platforms.build import write_engine

    shipped = write_engine(tmp_path)
    copied = sorted(p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file())
    assert copied == [p.relative_to(project.ENGINE_DIR) for p in project.engine_files()]
    assert any(p.parts[0] == "sandbox" for p in copied)


def test_the_torch_pin_is_read_from_the_constraints():
    import yaml

    from autograder.platforms.actions.run import workflow_yaml

    pin = next(line.split("+", 1)[0] for line in (ROOT / "constraints.txt").read_text().split()
               if line.startswith("torch=="))
    assert project.torch_requirement() == pin
    from autograder.model.assignment import load_assignment

    wf = yaml.safe_load(workflow_yaml(load_assignment("attention"), assignment_dir="grader"))
    install = next(s["run"] for s in wf["jobs"]["grade"]["steps"]
                   if s["name"] == "Install the grader")
    assert f"pip install {pin} --index-url {project.TORCH_CPU_INDEX}" in install


def test_constants_are_defined_once():
    """The engine directory, the torch index and the torch version appear in one module
    (the sandbox package, which imports nothing from the engine, locates itself on its own)."""
    offenders = []
    for f in project.engine_files():
        rel = f.relative_to(project.ENGINE_DIR)
        if f.suffix != ".py" or rel.as_posix() == "model/project.py" or rel.parts[0] == "sandbox":
            continue
        text = f.read_text()
        for needle in ("download.pytorch.org", "2.13", "Path(__file__).resolve().parent"):
            if needle in text:
                offenders.append(f"{f.relative_to(project.ENGINE_DIR)}: {needle}")
    assert offenders == []


def test_demo_results_are_not_tracked():
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "demo-results.json", "demo-results"], cwd=ROOT,
                             capture_output=True, text=True)
    if tracked.returncode == 0:   # a checkout (an unpacked copy has no git metadata)
        assert tracked.stdout.strip() == ""
    assert "demo-results" in (ROOT / ".gitignore").read_text()
