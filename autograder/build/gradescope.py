"""The Gradescope autograder zip (`<name>-gradescope.zip`): `setup.sh`, `run_autograder`, the
engine and the full assignment (hidden cases and the reference included); it grades with the
sandboxed `autograder grade` and converts its JSON (`autograder/gradescope.py`).
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..assignment import Assignment
from ..notebook import student_assignment_dir
from .common import (TORCH_CPU_INDEX, _split_torch, gradescope_settings, pinned_requirements,
                     write_assignment_folder, write_engine, zip_folder)

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
export DEBIAN_FRONTEND=noninteractive

if command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq
  # bubblewrap is the strongest sandbox where the container allows it; grading works without.
  apt-get install -y -qq python3 python3-venv bubblewrap >/dev/null || true
fi

# The engine needs Python 3.11 or newer.
PY=""
for candidate in python3.13 python3.12 python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && \\
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    PY="$(command -v "$candidate")"
    break
  fi
done
if [ -z "$PY" ]; then
  apt-get install -y -qq software-properties-common >/dev/null
  add-apt-repository -y ppa:deadsnakes/ppa
  apt-get update -qq
  apt-get install -y -qq python3.11 python3.11-venv >/dev/null
  PY="$(command -v python3.11)"
fi
if ! "$PY" -m venv "$ROOT/venv"; then
  apt-get install -y -qq "python3.$("$PY" -c 'import sys; print(sys.version_info[1])')-venv"
  "$PY" -m venv "$ROOT/venv"
fi

"$ROOT/venv/bin/python" -m pip install --quiet --upgrade pip
# A CPU build of torch, at the project's pinned version (no CUDA download).
"$ROOT/venv/bin/python" -m pip install --quiet {torch} --index-url {index}
"$ROOT/venv/bin/python" -m pip install --quiet -r requirements.txt
{permissions}"$ROOT/venv/bin/python" -m autograder sandbox
"""

# Part of setup.sh (and run alone by a test): the sandbox's unprivileged user may read the
# interpreter and the sandbox package, nothing else of the autograder's source (reference,
# question files with hidden cases, snapshots, the mistakes catalogue).
SETUP_PERMISSIONS = """\
chmod a+rx "$ROOT" || true
chmod -R a+rX "$ROOT/venv" || true
chmod -R go-rwx "$ROOT/source" || true
chmod -R a+rX "$ROOT/source/autograder/sandbox" || true
chmod a+r "$ROOT/source/autograder/__init__.py" || true
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission. GRADESCOPE_ROOT (default /autograder) is the folder
# holding source/, submission/ and results/: point it at a copy of that layout to try it locally.
# AUTOGRADER_PYTHON overrides the interpreter (default: the venv setup.sh made).
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
PYTHON="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
if [ ! -x "$PYTHON" ]; then PYTHON="$(command -v python3)"; fi
cd "$ROOT/source" || exit 1
exec "$PYTHON" -m autograder.gradescope --root "$ROOT" -a {assignment_dir}
"""


def build_gradescope(assignment: Assignment, out: Path) -> Path:
    """The Gradescope autograder zip."""
    gradescope_settings(assignment)   # validate early
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        write_engine(src)
        adir = student_assignment_dir(assignment)
        write_assignment_folder(assignment, src / adir, hidden=True, reference=True)
        torch, rest = _split_torch(pinned_requirements())
        (src / "requirements.txt").write_text(
            "# Installed by setup.sh after torch (CPU build). Pinned as in constraints.txt.\n"
            + "\n".join(rest) + "\n")
        (src / "setup.sh").write_text(SETUP_SH.format(torch=torch or "torch",
                                                      index=TORCH_CPU_INDEX,
                                                      permissions=SETUP_PERMISSIONS))
        (src / "run_autograder").write_text(RUN_AUTOGRADER.format(assignment_dir=adir))
        return zip_folder(src, out / f"{assignment.name}-gradescope.zip",
                          executables=("setup.sh", "run_autograder"))
