"""The Classroom 50 folder (`<name>-classroom50/`), to drop into the teacher's configuration
repository as `<classroom>/autograders/<slug>/`: `autograder.py` (checks and installs what it
needs, then grades the student's file; `platforms/classroom50/autograder_script.py`), the engine, the
assignment's question files and snapshots, and requirements as ranges.

Classroom 50 publishes that folder on a public web site, so by default it carries the public
cases only (their expected values are snapshots; no reference). `hidden=True` adds the hidden
cases and, since they are computed from it, the reference: anyone can then download both. The
authoritative grade stays `autograder grade --out` on the cloned repositories.
"""
from __future__ import annotations

from pathlib import Path

from ...model.assignment import Assignment
from ..notebook.build import student_assignment_dir
from ...model.project import ENGINE_DIR
from ..bundle import (STUDENT_EXTRA, TORCH_CPU_INDEX, fresh_folder, student_requirements,
                     write_assignment_folder, write_engine)

TEMPLATE = ENGINE_DIR / "platforms" / "classroom50" / "autograder_script.py"

HIDDEN_WARNING = ("the Classroom 50 folder includes the hidden cases and the reference "
                  "implementation; Classroom 50 serves it on a public web site, so anyone "
                  "can download both")

README = """\
# Classroom 50 autograder: {title}

Copy this folder's contents into your classroom50 configuration repository as
`<classroom>/autograders/<slug>/` and push. On every push and `submit/*` tag of a student,
Classroom 50 runs `autograder.py` in the student's checkout; it installs what is missing
(nothing, when a suitable torch and numpy are already there), grades the student's file with
the sandboxed grader and writes `result.json` (one row per question, whole points) and
`release-body.md` (per-question feedback, shown on the submission's Release).

{cases}

The grade that counts stays `autograder grade -a ASSIGNMENT REPOS... --out DIR` on the cloned
repositories: it runs every case and flags repositories whose shipped files were changed.

Try it locally, in a student's checkout:

```sh
CLASSROOM50_BUNDLE_DIR=/path/to/this/folder python /path/to/this/folder/autograder.py
```
"""

PUBLIC_ONLY = ("**Public cases only.** Classroom 50 serves this folder on a public web site, "
               "so it carries no hidden case and no reference implementation.")
WITH_HIDDEN = ("**Warning: hidden cases and the reference implementation are included** "
               "(built with `--classroom50-hidden`). Classroom 50 serves this folder on a public "
               "web site: anyone can download the hidden cases and the solution.")


def write_classroom50(assignment: Assignment, dest: Path, *, hidden: bool = False) -> Path:
    """The Classroom 50 folder in `dest` (a fresh folder)."""
    fresh_folder(dest)
    write_engine(dest)
    adir = student_assignment_dir(assignment)
    write_assignment_folder(assignment, dest / adir, hidden=hidden, reference=hidden)
    (dest / "requirements.txt").write_text(
        "# What autograder.py checks for; only what is missing or too old gets installed.\n"
        + "\n".join(r for r in student_requirements() if r not in STUDENT_EXTRA) + "\n")
    script = TEMPLATE.read_text().replace("{{ASSIGNMENT_DIR}}", adir) \
        .replace("{{TORCH_INDEX}}", TORCH_CPU_INDEX)
    (dest / "autograder.py").write_text(script)
    (dest / "README.md").write_text(README.format(
        title=assignment.title, cases=WITH_HIDDEN if hidden else PUBLIC_ONLY))
    return dest


def build_classroom50(assignment: Assignment, out: Path, *, hidden: bool = False) -> Path:
    return write_classroom50(assignment, out / f"{assignment.name}-classroom50", hidden=hidden)
