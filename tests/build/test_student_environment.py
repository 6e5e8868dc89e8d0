"""Students keep their own environment: the bundle's requirements are ranges (graders keep the
pins), the notebook finds its checks when opened on its own, an old Python gets one sentence,
and `check` in a bundle with one assignment picks it."""
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers import ROOT, SUBMISSIONS

from autograder.model.assignment import load_assignment
from autograder.platforms.build import build_student, zip_folder
from autograder.platforms.notebook.build import build_notebook


def _requirements(path: Path) -> dict[str, str]:
    reqs = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name = re.split(r"[<>=!~; \[]", line, maxsplit=1)[0].lower()
            reqs[name] = line
    return reqs


def test_student_requirements_are_ranges_and_graders_keep_pins(built):
    reqs = _requirements(built / "attention-student" / "requirements.txt")
    assert reqs["torch"] == "torch>=2.4" and reqs["numpy"] == "numpy>=1.26"
    assert not any("==" in r for r in reqs.values()), reqs
    # otter-grader needs pandas; pandas 3 needs numpy 2: capped so numpy 1.26 stays.
    assert reqs["pandas"] == "pandas>=2,<3"
    import zipfile

    with zipfile.ZipFile(built / "attention-gradescope.zip") as z:
        text = z.read("requirements.txt").decode() + z.read("setup.sh").decode()
    assert re.search(r"torch==\d", text) and re.search(r"numpy==\d", text)


def test_old_python_gets_one_sentence():
    # The package's __init__ must parse on old Pythons to say so.
    ast.parse((ROOT / "autograder" / "__init__.py").read_text(), feature_version=(3, 6))
    code = ("import sys; sys.version_info = (3, 10, 12, 'final', 0); "
            "sys.argv = ['autograder', 'check']; import runpy; "
            "runpy.run_module('autograder', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip() == ("autograder needs Python 3.11 or newer, and this is Python "
                                "3.10: install a newer Python (python.org, or your package "
                                "manager), or in Colab use the default runtime.")
    # Real old interpreters, where there are some: on PATH, or installed by pyenv.
    pyenv = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser() / "versions"
    olds = [str(p) for p in pyenv.glob("3.*/bin/python")] + \
        [p for m in range(6, 11) if (p := shutil.which(f"python3.{m}"))]
    for python in olds:   # real old interpreters, where there are some
        version = re.search(r"3\.(\d+)", python)
        runs = os.path.exists(python) and subprocess.run(
            [python, "-c", "pass"], capture_output=True).returncode == 0   # not a bare shim
        if runs and version and int(version.group(1)) < 11:
            r = subprocess.run([python, "-m", "autograder", "check"], cwd=ROOT,
                               capture_output=True, text=True)
            assert "Traceback" not in r.stderr and "needs Python 3.11" in r.stderr


def test_check_in_a_bundle_with_one_assignment_picks_it(tmp_path):
    numpy_track = load_assignment("attention_numpy")
    bundle = build_student(numpy_track, tmp_path)
    env = {"PYTHONPATH": str(bundle)}
    r = subprocess.run([sys.executable, "-m", "autograder", "check"], cwd=bundle, env={
        **os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert "not implemented" in r.stdout.lower(), r.stdout + r.stderr
    assert numpy_track.title in r.stdout
    # Named differently, still the bundle's only assignment.
    shutil.copy(bundle / numpy_track.student_file, bundle / "my_work.py")
    r = subprocess.run([sys.executable, "-m", "autograder", "check", "my_work.py"], cwd=bundle,
                       env={**os.environ, **env}, capture_output=True, text=True, timeout=300)
    assert numpy_track.title in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("layout", ["folder", "flat"])
def test_notebook_opened_on_its_own_finds_its_checks_from_the_zip(built, assignment, tmp_path,
                                                                  layout):
    """Uploaded alone with the bundle's zip (as to Colab), in a folder far from the project.
    The zip holds the folder attention-student/; a flat zip of an older build (its files at
    the top) is unpacked into that folder too."""
    solution = (SUBMISSIONS / "correct" / "einsum_style.py").read_text()
    (tmp_path / "attention.ipynb").write_text(nbformat.writes(build_notebook(assignment,
                                                                             solution)))
    if layout == "folder":
        shutil.copy(built / "attention-student.zip", tmp_path)
    else:
        zip_folder(built / "attention-student", tmp_path / "attention-student.zip")
    nb = nbformat.read(str(tmp_path / "attention.ipynb"), as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    checks = ["\n".join(o.get("data", {}).get("text/plain", "") or o.get("text", "")
                        for o in c.outputs)
              for c in nb.cells if c.cell_type == "code" and c.source.startswith("grader.check(")]
    assert len(checks) == len(assignment.questions)
    assert all("passed" in text.lower() for text in checks), checks
    assert (tmp_path / "attention-student" / "autograder").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "attention-student", "attention-student.zip", "attention.ipynb"]


def test_notebook_alone_says_what_it_needs(assignment, tmp_path):
    (tmp_path / "attention.ipynb").write_text(nbformat.writes(build_notebook(assignment)))
    nb = nbformat.read(str(tmp_path / "attention.ipynb"), as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with pytest.raises(CellExecutionError) as err:
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
    assert "upload attention-student.zip next to this notebook" in str(err.value)
