"""The student bundle (`<name>-student/` and a zip of it): the template `.py` and notebook, the
engine, and the assignment's public question files and snapshots, with no reference code, so
`autograder check` and `grader.check` run from snapshots. With its GitHub Classroom workflow it
is also the template repository of a Classroom assignment.
"""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ...model.assignment import Assignment
from ..notebook.build import notebook_text, student_assignment_dir
from ..bundle import (fresh_folder, student_requirements, student_requirements_text,
                     write_assignment_folder, write_engine, zip_folder)

STUDENT_README = """\
# {title}

Your starting files:

* `{py}`: the exercises as a Python file;
* `{nb}`: the same exercises as a Jupyter notebook, with an explanation for each question.

Work in whichever you prefer and submit that one file. Each function's docstring states its
contract: what it takes and what it must return.

## Setup (once)

You need Python 3.11 or newer. The requirements are ranges (torch 2.4 or newer, numpy 1.26 or
newer): in an environment that already has torch (Colab, your own Jupyter), pip keeps it.

```sh
python3 -m venv .venv
. .venv/bin/activate            # Windows: .venv\\Scripts\\activate
pip install -r requirements.txt
```

For the notebook you also need Jupyter (JupyterLab, VS Code...) with this environment's kernel.
In Colab: upload `{nb}` and this folder's zip (`{zip}`) next to it, then run the
notebook's first code cell: it unpacks the zip and installs what the checks need.

## Checking your work

From this folder:

```sh
python -m autograder check {py}        # or: python -m autograder check {nb}
python -m autograder check {py} -v     # list the passing cases too
```

In the notebook, run the first code cell once, then the `grader.check("...")` cell under each
question. A question not started says "not implemented yet"; a failing case says what is wrong.

These are the public cases. More cases, with other inputs than these, are graded after you
submit, so write general code rather than code that fits these examples.

## What is in this folder

* `{assignment_dir}/`: the public test cases (`tests/`) and their expected values
  (`snapshots/`); `template/` keeps an untouched copy of the template.
* `autograder/`: the checking engine. You do not need to read or change it.
"""


CLASSROOM_INSTALL = ["pip install -r requirements.txt"]


def classroom_workflow(assignment: Assignment) -> str:
    """The GitHub Actions workflow of a student repository made from the student bundle."""
    from ..actions.run import workflow_yaml

    return workflow_yaml(assignment, assignment_dir=student_assignment_dir(assignment),
                         install=CLASSROOM_INSTALL)


def answer_files(assignment: Assignment) -> tuple[str, str]:
    """The files of the student bundle that students fill in: the `.py` and the notebook."""
    py = assignment.student_file
    return py, Path(py).stem + ".ipynb"


def bundle_files(assignment: Assignment) -> dict[str, bytes]:
    """Every file of the student bundle, the two answer files (as handed out) included:
    {path relative to the bundle: content}."""
    with tempfile.TemporaryDirectory() as tmp:
        dest = write_student_bundle(assignment, Path(tmp) / "bundle")
        return {f.relative_to(dest).as_posix(): f.read_bytes()
                for f in sorted(dest.rglob("*")) if f.is_file()}


def shipped_files(assignment: Assignment, bundle: Mapping[str, bytes] | None = None
                  ) -> dict[str, bytes]:
    """Every file of the student bundle that students must not change (all but the two they
    fill in): the workflow, the engine copy, the assignment folder, requirements and README.
    Class grading flags repositories where one differs, is missing, or was added beside them."""
    answers = set(answer_files(assignment))
    bundle = bundle_files(assignment) if bundle is None else bundle
    return {rel: data for rel, data in bundle.items() if rel not in answers}


def write_student_bundle(assignment: Assignment, dest: Path) -> Path:
    """The student bundle's files in `dest` (a fresh folder)."""
    fresh_folder(dest)
    py, nb = answer_files(assignment)
    shutil.copyfile(assignment.template, dest / py)
    (dest / nb).write_text(notebook_text(assignment))
    write_engine(dest)
    adir = student_assignment_dir(assignment)
    write_assignment_folder(assignment, dest / adir, hidden=False, reference=False,
                            grader_tables=False)
    student_reqs = student_requirements(extra=("ipykernel",))
    (dest / "requirements.txt").write_text(student_requirements_text(student_reqs))
    (dest / "README.md").write_text(STUDENT_README.format(
        title=assignment.title, py=py, nb=nb, assignment_dir=adir,
        zip=f"{assignment.name}-student.zip"))
    from ..actions.run import WORKFLOW_PATH

    (dest / WORKFLOW_PATH).parent.mkdir(parents=True, exist_ok=True)
    (dest / WORKFLOW_PATH).write_text(classroom_workflow(assignment))
    return dest


def build_student(assignment: Assignment, out: Path) -> Path:
    """The student bundle folder (and a zip of it next to it, holding that folder: unzipped,
    it makes `<name>-student/`); with its GitHub Classroom workflow, it is also the template
    repository of a Classroom assignment."""
    dest = write_student_bundle(assignment, out / f"{assignment.name}-student")
    zip_folder(dest, out / f"{assignment.name}-student.zip", top=dest.name)
    return dest
