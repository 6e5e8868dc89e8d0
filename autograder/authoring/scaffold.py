"""`autograder new NAME`: the files of a new assignment, ready to edit, that already work.

It writes, under a project folder (the current one by default), the three places an assignment
lives in: `student_template/NAME.py` (the stubs), `reference/NAME.py` (the hidden answers) and
`assignments/NAME/` (`assignment.toml`, one question file with a public and a hidden case, a
catalogue of known mistakes with one mistake that the public case catches, and `notebook.md`);
then it records the public case's snapshot and the catalogue's table and writes the student
notebook, as `autograder snapshot` and `python -m autograder.platforms.notebook` would. The
result lints clean and its reference takes every autograded point: the author replaces the
example function with theirs and reruns those two commands.

No `written.toml` is written: written questions are optional, and a placeholder question would
reach students unnoticed; docs/writing-an-assignment.md shows how to add one. Nothing existing
is overwritten: the command refuses, naming what is already there.
"""
from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass
from pathlib import Path

TRACKS = ("torch", "numpy")


class ScaffoldError(ValueError):
    """A name or a place the scaffold cannot use (a user's mistake: one line, status 2)."""


@dataclass(frozen=True)
class Track:
    """What differs between the torch and the NumPy track's files."""

    imports: str
    noun: str              # what the function takes and returns
    rules: str             # the template's rules for every function
    literal: str           # a question file's literal input
    batch: str             # a question file's seeded input
    helpers: str           # what a question file imports from autograder.cases
    grad_note: str


_TRACKS = {
    "torch": Track(
        imports="import torch", noun="tensor",
        rules="* Keep the input dtype: float32 in gives float32 out, float64 in gives float64 "
              "out.\n* Stay differentiable: torch operations only, no .detach().\n"
              "* Do not modify your inputs in place.",
        literal="tensor([1.0, 2.0, 3.0])",
        batch='randn(2, 3, 4, seed=1, dtype="float64")',
        helpers="Question, randn, snapshot, tensor",
        grad_note="its gradient is checked too (a seeded upstream gradient)"),
    "numpy": Track(
        imports="import numpy as np", noun="NumPy array",
        rules="* Keep the input dtype: float32 in gives float32 out, float64 in gives float64 "
              "out.\n* Work with NumPy arrays and operations.\n"
              "* Do not modify your inputs in place.",
        literal="array([1.0, 2.0, 3.0])",
        batch='to_numpy(randn(2, 3, 4, seed=1, dtype="float64"))',
        helpers="Question, array, randn, snapshot, to_numpy",
        grad_note="NumPy has no gradients to check"),
}


def _template(name: str, title: str, t: Track) -> str:
    return f'''"""{title}.

Fill in each function below: its docstring states what to take and what to return. Rules that
hold for every function:

{t.rules}

Check your work, from the folder of this file:  python -m autograder check {name}.py
"""
{t.imports}


def scale(x, factor):
    """Return `x` times the number `factor`: a {t.noun} of the same shape and dtype as `x`.

    (An example function made by `autograder new`: replace it with your own, its contract in
    this docstring.)
    """
    raise NotImplementedError("scale")
'''


def _reference(name: str, t: Track) -> str:
    return f'''"""Hidden reference implementation of the `{name}` assignment.

Never shipped to students. The grader calls these functions in its trusted process for the
hidden cases, and `autograder snapshot` records their outcomes for the public ones.
"""
{t.imports}


def scale(x, factor):
    return x * factor
'''


def _toml(name: str, title: str) -> str:
    return f'''# The {name} assignment. Paths are relative to this folder or to the project root;
# every key: docs/writing-an-assignment.md.
name = "{name}"
title = "{_toml_string(title)}"
student_file = "{name}.py"
template = "student_template/{name}.py"
reference = "reference/{name}.py"
# Known mistakes named in feedback (instructor-only, like the reference).
mistakes = "mistakes.py"

[limits]
question_seconds = 10

[[question]]
id = "scale"
functions = ["scale"]
'''


def _question(t: Track) -> str:
    return f'''"""Question scale: a tensor times a number (an example made by `autograder new`)."""
from otter.test_files import test_case

from autograder.cases import {t.helpers}

OK_FORMAT = False

name = "scale"
points = 2

q = Question(name)


@test_case(name="three numbers times 2", points=1, hidden=False)
def small(scale):
    """A public case: students run it; its expected value is recorded in snapshots/scale.json
    by `autograder snapshot`."""
    q.check("scale", scale, {t.literal}, 2.0, expected=snapshot("small"))


@test_case(name="a batch, float64", points=1, hidden=True)
def batched(scale):
    """A hidden case: graded after submission against the reference ({t.grad_note})."""
    q.check("scale", scale, {t.batch}, 0.5, seed=1)
'''


def _catalogue(name: str) -> str:
    return f'''"""Known mistakes of the {name} assignment, named in feedback when a case shows one
(docs/writing-an-assignment.md, "Known mistakes"). Instructor-only, like the reference.

A variant is the reference's function as the mistake computes it, taking the reference module
first; a rule names what an outcome shows. `autograder lint` asks that a public case catch
every variant, and `autograder snapshot` records their outcomes on the public cases for the
students' own checks.
"""
from autograder.catalogue import Catalogue, changed_input

catalogue = Catalogue()


@catalogue.variant("scale_adds", "scale", name="the factor added instead of multiplied",
                   hint="Multiply by the factor: `x * factor`.")
def scale_adds(ref, x, factor):
    return x + factor


catalogue.rule(
    "inplace_input", when=changed_input, name="an input modified in place",
    hint="Writing into an input (`x *= factor`, `x[...] = ...`) changes the caller's data: "
         "compute a new result instead.")
'''


def _notebook(name: str, title: str) -> str:
    return f'''# {title}

Run the first code cell once: it prepares `grader`, which runs the public checks. Then replace
each `raise NotImplementedError(...)` with your code, run the cell, and run the
`grader.check(...)` cell under it.

<!-- question: scale -->
## 1. Scale

Multiply by a number, keeping the shape and the dtype.

<!-- end -->
Submit this notebook (or the same functions in `{name}.py`) as your course says.
'''


def _toml_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def check_name(name: str) -> None:
    """An assignment's name is the stem of the file students submit: a Python module name."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ScaffoldError(f"{name!r} cannot name an assignment: use lower-case letters, digits "
                            "and _, starting with a letter (students submit NAME.py, a module "
                            "name)")


def planned_files(project: Path, name: str, title: str, track: str) -> dict[Path, str]:
    """{path: content} of the files `autograder new` writes under `project`."""
    if track not in _TRACKS:
        raise ScaffoldError(f"unknown track {track!r}: one of {', '.join(TRACKS)}")
    t = _TRACKS[track]
    adir = project / "assignments" / name
    return {
        project / "student_template" / f"{name}.py": _template(name, title, t),
        project / "reference" / f"{name}.py": _reference(name, t),
        adir / "assignment.toml": _toml(name, title),
        adir / "tests" / "scale.py": _question(t),
        adir / "mistakes.py": _catalogue(name),
        adir / "notebook.md": _notebook(name, title),
    }


def scaffold(project: Path, name: str, *, track: str = "torch",
             title: str | None = None) -> list[Path]:
    """Write a new assignment `name` under `project` and record what it needs to lint clean
    (snapshots, the catalogue's table, the notebook); the files written, in order."""
    check_name(name)
    title = title or name.replace("_", " ").capitalize()
    files = planned_files(project, name, title, track)
    there = [p for p in files if p.exists()] + \
        [p for p in [project / "assignments" / name] if p.exists()]
    from ..model.project import ASSIGNMENTS_DIR

    shadow = ASSIGNMENTS_DIR / name
    if (shadow / "assignment.toml").is_file() and \
            Path(os.path.abspath(project)) != ASSIGNMENTS_DIR.parent:
        raise ScaffoldError(f"the project of this grader already has an assignment {name!r}, "
                            f"which `-a {name}` would find first: choose another name")
    if there:
        from .paths import project_relative

        shown = ", ".join(sorted({project_relative(p, project) for p in there}))
        raise ScaffoldError(f"not overwriting what is there: {shown}")
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return list(files) + _record(project / "assignments" / name)


def _record(adir: Path) -> list[Path]:
    """The snapshot of the public case, the catalogue's table and the student notebook."""
    from ..model.assignment import load_assignment
    from .mistake_table import write_table
    from ..platforms.notebook.build import notebook_path, notebook_text
    from .snapshots import record, write_snapshots

    assignment = load_assignment(adir)
    recorded = record(assignment)
    if recorded.failing:    # the scaffold's own reference: a bug of this module
        raise RuntimeError(f"the new reference fails its public cases {recorded.failing}")
    written = [w.path for w in write_snapshots(assignment, recorded)]
    write_table(assignment)
    notebook = notebook_path(assignment)
    notebook.write_text(notebook_text(assignment))
    return written + [assignment.mistake_table, notebook]


def run(name: str, project: Path, track: str, title: str | None) -> list[str]:
    """`autograder new`: the lines it prints (each file written, then what to do next)."""
    from ..model.safetext import shown_path

    written = scaffold(project, name, track=track, title=title)
    here = Path(os.path.abspath(project)) == Path.cwd()
    ref = "-a " + (name if here else shown_path(project / "assignments" / name))
    lines = [f"wrote {shown_path(p)}" for p in written]
    lines += ["", f"a {track} assignment `{name}` with one example question; next:",
              f"  1. write your functions in {shown_path(project / 'student_template')}/"
              f"{name}.py (the contract) and {shown_path(project / 'reference')}/{name}.py",
              f"  2. your questions in {shown_path(project / 'assignments' / name / 'tests')}/ "
              "(one file per [[question]] of assignment.toml), your mistakes in mistakes.py",
              f"  3. autograder snapshot {ref}; python -m autograder.platforms.notebook "
              f"{ref[3:]}",
              f"  4. autograder lint {ref}   (the guide: docs/writing-an-assignment.md)"]
    return lines
