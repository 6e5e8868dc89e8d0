"""The Gradescope autograder zip (`<name>-gradescope.zip`): `setup.sh`, `run_autograder`, the
engine and the full assignment (hidden cases and the reference included); it grades with the
sandboxed `autograder grade` and converts its JSON (`autograder/platforms/gradescope/run.py`).
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ...model.assignment import Assignment
from ..notebook.build import student_assignment_dir
from ..bundle import (TORCH_CPU_INDEX, BuildError, gradescope_settings, pinned_requirements,
                     split_torch_pin, write_assignment_folder, write_engine, zip_folder)

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

{python}if ! "$PY" -m venv "$ROOT/venv"; then
  apt-get install -y -qq "python3.$("$PY" -c 'import sys; print(sys.version_info[1])')-venv"
  "$PY" -m venv "$ROOT/venv"
fi

"$ROOT/venv/bin/python" -m pip install --quiet --upgrade pip
# A CPU build of torch, at the project's pinned version (no CUDA download).
"$ROOT/venv/bin/python" -m pip install --quiet {torch} --index-url {index}
"$ROOT/venv/bin/python" -m pip install --quiet -r requirements.txt
# The engine compiled here, once: every submission's run starts from this image, and would
# otherwise compile it again in each of its processes (a few tenths of a second of CPU).
"$ROOT/venv/bin/python" -m compileall -qq "$ROOT/source/autograder" >/dev/null || true
{permissions}"$ROOT/venv/bin/python" -m autograder sandbox
"""

# Part of setup.sh (and run alone by a test, with stand-ins for apt): find or install Python
# 3.11+, the distribution's own packages before any third-party repository. Debian 12 ships
# 3.11 as python3 and Ubuntu 24.04 ships 3.12; Ubuntu 22.04 (Gradescope's current base image)
# ships 3.10 as python3 and python3.11 in its own universe component; only Ubuntu 20.04 and
# older need the deadsnakes PPA, the last resort.
SETUP_PYTHON = """\
# Python 3.11 or newer: one already installed, else the distribution's packages, a PPA last.
find_python() {
  PY=""
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && \\
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      PY="$(command -v "$candidate")"
      return 0
    fi
  done
  return 1
}
install_from_apt() {   # the newest python3.X (3.11+) that the configured repositories offer
  local v
  for v in 3.13 3.12 3.11; do
    if apt-cache policy "python$v" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      echo "setup.sh: installing python$v from $1"
      apt-get install -y -qq "python$v" "python$v-venv" >/dev/null && return 0
    fi
  done
  return 1
}
if ! find_python && command -v apt-get >/dev/null 2>&1; then
  install_from_apt "the distribution's repositories" || true
  if ! find_python; then
    # Ubuntu's universe is still the distribution's own; enable it before any PPA.
    apt-get install -y -qq software-properties-common >/dev/null || true
    if command -v add-apt-repository >/dev/null 2>&1 && add-apt-repository -y universe; then
      apt-get update -qq || true
      install_from_apt "the distribution's universe component" || true
    fi
  fi
  if ! find_python && command -v add-apt-repository >/dev/null 2>&1; then
    echo "setup.sh: no Python 3.11+ in the distribution's repositories; using the deadsnakes PPA"
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -qq || true
    install_from_apt "the deadsnakes PPA" || true
  fi
  find_python || true
fi
if [ -z "$PY" ]; then
  echo "setup.sh: no Python 3.11 or newer could be found or installed" >&2
  exit 1
fi
echo "setup.sh: using $PY ($("$PY" --version 2>&1))"
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
#
# Whatever happens (no venv, a Python too old, the grader crashing or killed for memory), this
# leaves a valid results.json whose `output` says why; it uses only shell builtins, mkdir and mv
# for that, so it works when Python does not.
ROOT="${{GRADESCOPE_ROOT:-/autograder}}"
# Relative paths are the caller's: made absolute before this changes folder (below).
case "$ROOT" in /*) ;; *) ROOT="$PWD/$ROOT" ;; esac
RESULTS="$ROOT/results/results.json"
# Question ids and points, fixed when the zip was built (the fallback needs no Python).
QUESTIONS=({questions})
NOTE=""

fallback() {{
  local reason="$1" tests="" sep="" row
  reason="${{reason//[[:cntrl:]]/ }}"
  reason="${{reason//\\\\/\\\\\\\\}}"
  reason="${{reason//\\"/\\\\\\"}}"
  for row in "${{QUESTIONS[@]}}"; do
    tests+="$sep{{\\"name\\": \\"${{row%%:*}}\\", \\"score\\": 0.0, \\"max_score\\": ${{row#*:}}, "
    tests+="\\"status\\": \\"failed\\", \\"output\\": \\"$reason\\", \\"output_format\\": \\"text\\", "
    tests+="\\"visibility\\": \\"visible\\"}}"
    sep=", "
  done
  mkdir -p "$ROOT/results" 2>/dev/null
  printf '{{"score": 0.0, "output": "%s", "output_format": "text", "stdout_visibility": "hidden", "tests": [%s]}}\\n' \\
    "$reason" "$tests" > "$RESULTS.tmp" && mv -f "$RESULTS.tmp" "$RESULTS"
  echo "run_autograder: $1" >&2
  exit 0
}}

PYTHON="${{AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}}"
case "$PYTHON" in
  /*) ;;
  */*) PYTHON="$PWD/$PYTHON" ;;                          # .venv/bin/python: the caller's folder
  *) PYTHON="$(command -v "$PYTHON" || echo "$PYTHON")" ;; # python3: looked up on PATH
esac
if [ ! -x "$PYTHON" ]; then
  NOTE="the autograder's Python ($PYTHON) is missing: setup.sh did not finish"
  PYTHON="$(command -v python3 || true)"
  if [ -z "$PYTHON" ]; then
    fallback "The autograder could not run: $NOTE, and there is no python3 either. This is not your fault: tell your instructor."
  fi
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  VERSION="$("$PYTHON" --version 2>&1)"
  VERSION="${{VERSION%%$'\\n'*}}"
  VERSION="${{VERSION//[^A-Za-z0-9. +-]/}}"
  fallback "The autograder could not run: it needs Python 3.11 or newer and found ${{VERSION:-no working Python}} ($PYTHON)${{NOTE:+; $NOTE}}. This is not your fault: tell your instructor."
fi
[ -n "$NOTE" ] && echo "run_autograder: $NOTE; using $PYTHON" >&2
cd "$ROOT/source" 2>/dev/null || fallback "The autograder could not run: its source folder is missing. This is not your fault: tell your instructor."
mkdir -p "$ROOT/results" 2>/dev/null
rm -f "$RESULTS"
"$PYTHON" -m autograder.platforms.gradescope --root "$ROOT" -a {assignment_dir}
STATUS=$?
# A results.json the engine wrote counts only if it is whole (it writes it in one go, last).
if "$PYTHON" -I -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not isinstance(r.get("score"), (int, float)) or not isinstance(r.get("tests", []), list))' "$RESULTS" 2>/dev/null; then
  exit 0
fi
if [ "$STATUS" -eq 137 ] || [ "$STATUS" -eq 9 ]; then
  fallback "The autograder was killed (SIGKILL) before it could write your results: most likely the container ran out of memory. If your code keeps very large tensors, free them; otherwise tell your instructor."
fi
fallback "The autograder stopped (exit status $STATUS) without writing valid results. This is not your fault: tell your instructor."
"""


def fallback_questions(assignment: Assignment) -> str:
    """The bash words `id:max_score` of every question, for run_autograder's fallback."""
    from .run import failure_results

    words = []
    for test in failure_results("", assignment)["tests"]:
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", test["name"]):
            raise BuildError(f"question id {test['name']!r}: letters, digits, _ . - only")
        words.append(f"{test['name']}:{float(test['max_score'])!r}")
    return " ".join(words)


def build_gradescope(assignment: Assignment, out: Path) -> Path:
    """The Gradescope autograder zip."""
    gradescope_settings(assignment)   # validate early
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        write_engine(src)
        adir = student_assignment_dir(assignment)
        write_assignment_folder(assignment, src / adir, hidden=True, reference=True)
        torch, rest = split_torch_pin(pinned_requirements())
        (src / "requirements.txt").write_text(
            "# Installed by setup.sh after torch (CPU build). Pinned as in constraints.txt.\n"
            + "\n".join(rest) + "\n")
        (src / "setup.sh").write_text(SETUP_SH.format(torch=torch or "torch",
                                                      index=TORCH_CPU_INDEX,
                                                      permissions=SETUP_PERMISSIONS,
                                                      python=SETUP_PYTHON))
        (src / "run_autograder").write_text(RUN_AUTOGRADER.format(
            assignment_dir=adir, questions=fallback_questions(assignment)))
        return zip_folder(src, out / f"{assignment.name}-gradescope.zip",
                          executables=("setup.sh", "run_autograder"))
