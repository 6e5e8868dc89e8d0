#!/usr/bin/env python3
"""Classroom 50 entry point, written by `autograder build` (do not edit: rebuild instead).

The runner runs `python autograder.py` in a checkout of the student's repository, with this
folder in CLASSROOM50_BUNDLE_DIR. This script only makes sure the grader can run, then hands
over to `python -m autograder.platforms.classroom50`, which grades the student's file and writes
result.json and release-body.md:

1. a Python 3.11 or newer: this one, else the newest python3.1x on PATH;
2. the requirements (requirements.txt here, ranges): checked in that Python first, and only
   what is missing or too old is installed, into a virtual environment that sees the packages
   already there (so a suitable torch is never downloaded again). Torch comes from PyTorch's
   CPU index. CLASSROOM50_NO_INSTALL=1 forbids installing (the run fails, saying what is
   missing).

It uses the standard library only and parses on old Pythons, so it can always say what is wrong.
Every Python it starts runs in this folder, isolated (`-I`) where it needs nothing else: the
student's checkout, the runner's working directory, is never on the module path, so a `json.py`
or `venv.py` committed there is never imported.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ASSIGNMENT_DIR = "{{ASSIGNMENT_DIR}}"
TORCH_INDEX = "{{TORCH_INDEX}}"
HERE = os.path.dirname(os.path.abspath(__file__))
# Relative to the runner's working directory (the student's checkout), as a shell reads it:
# made absolute before any Python is started in another folder.
BUNDLE = os.path.abspath(os.environ.get("CLASSROOM50_BUNDLE_DIR") or HERE)

# Run inside the candidate Python: prints the requirements it does not satisfy, as JSON.
CHECK = r"""
import json, re, sys
from importlib import metadata

def release(v):
    parts = []
    for p in re.split(r"[.+!-]", v):
        m = re.match(r"\d+", p)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)

def ok(have, op, want):
    h, w = release(have), release(want)
    n = max(len(h), len(w))
    h, w = h + (0,) * (n - len(h)), w + (0,) * (n - len(w))
    return {">=": h >= w, ">": h > w, "<=": h <= w, "<": h < w, "==": h == w,
            "!=": h != w}[op]

missing = []
for line in sys.stdin.read().splitlines():
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        continue
    name = re.split(r"[<>=!~;\[ ]", line, 1)[0]
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        missing.append(line)
        continue
    for op, want in re.findall(r"(>=|<=|==|!=|<|>)\s*([\w.*+!-]+)", line):
        if not ok(have, op, want.rstrip(".*")):
            missing.append(line)
            break
print(json.dumps(missing))
"""


def say(text):
    print("autograder.py: " + text, flush=True)


def version_ok(python):
    try:
        out = subprocess.run([python, "-I", "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60,
                             cwd=BUNDLE)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.stdout.strip() == b"True"


def find_python():
    if sys.version_info >= (3, 11):
        return sys.executable
    for name in ("python3.14", "python3.13", "python3.12", "python3.11", "python3"):
        path = shutil.which(name)
        if path and version_ok(path):
            return path
    return None


def requirements():
    path = os.path.join(BUNDLE, "requirements.txt")
    with open(path) as f:
        return [line.strip() for line in f if line.split("#", 1)[0].strip()
                and not line.startswith("-")]


def missing_in(python, reqs):
    out = subprocess.run([python, "-I", "-c", CHECK], input="\n".join(reqs).encode(),
                         stdout=subprocess.PIPE, timeout=300, cwd=BUNDLE)
    if out.returncode != 0:
        return list(reqs)
    return json.loads(out.stdout.decode() or "[]")


def site_dirs(python):
    out = subprocess.run([python, "-I", "-c", "import json, site, sysconfig; print(json.dumps("
                          "site.getsitepackages() + [sysconfig.get_paths()['purelib']]))"],
                         stdout=subprocess.PIPE, timeout=60, cwd=BUNDLE)
    return json.loads(out.stdout.decode() or "[]") if out.returncode == 0 else []


def install(python, missing):
    """A virtual environment that sees `python`'s packages (through a .pth file, which works
    when `python` is itself in a virtual environment), with the missing ones added; its
    python."""
    base = os.environ.get("RUNNER_TEMP") or tempfile.gettempdir()
    venv = os.path.join(base, "autograder-venv")
    subprocess.run([python, "-I", "-m", "venv", "--clear", venv], check=True, cwd=BUNDLE)
    new = os.path.join(venv, "bin", "python")
    if not os.path.exists(new):
        new = os.path.join(venv, "Scripts", "python.exe")
    own = site_dirs(new)[-1]
    with open(os.path.join(own, "zz_autograder_base.pth"), "w") as f:
        f.write("\n".join(d for d in site_dirs(python) if os.path.isdir(d)) + "\n")
    torch = [r for r in missing if re.split(r"[<>=!~;\[ ]", r, 1)[0].lower() == "torch"]
    rest = [r for r in missing if r not in torch]
    if torch:
        say("installing " + " ".join(torch) + " (CPU build)")
        subprocess.run([new, "-I", "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", "--index-url", TORCH_INDEX] + torch,
                       check=True, cwd=BUNDLE)
    if rest:
        say("installing " + " ".join(rest))
        subprocess.run([new, "-I", "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check"] + rest, check=True, cwd=BUNDLE)
    return new


def bundle_problem():
    """Why BUNDLE is not this grader's folder (None when it is)."""
    wanted = ["requirements.txt", os.path.join("autograder", "platforms", "classroom50", "run.py"),
              os.path.join(ASSIGNMENT_DIR, "assignment.toml")]
    missing = [w for w in wanted if not os.path.isfile(os.path.join(BUNDLE, w))]
    if not missing:
        return None
    given = os.environ.get("CLASSROOM50_BUNDLE_DIR")
    where = "CLASSROOM50_BUNDLE_DIR=%s (%s)" % (given, BUNDLE) if given else BUNDLE
    return ("%s is not the grader's folder: it has no %s. Point CLASSROOM50_BUNDLE_DIR at the "
            "folder holding this autograder.py, or leave it unset" % (where, missing[0]))


def main():
    if ASSIGNMENT_DIR.startswith("{{"):
        say("this is the template of the script `autograder build` writes into the Classroom 50 "
            "folder: run that one")
        return 2
    problem = bundle_problem()
    if problem:
        say(problem)
        return 2
    python = find_python()
    if python is None:
        say("the grader needs Python 3.11 or newer, and none was found (this is "
            "Python %d.%d): in Classroom 50, set the assignment's runtime Python in its "
            "assignments.json entry (\"runtime\": {\"python\": \"3.13\"}; the runner's "
            "default is 3.14); in a workflow of your own, use actions/setup-python with "
            "python-version 3.11 or newer" % sys.version_info[:2])
        return 2
    try:
        reqs = requirements()
    except OSError as e:
        say("cannot read the bundle's requirements.txt (%s): run the autograder.py of the folder "
            "`autograder build` wrote, or set CLASSROOM50_BUNDLE_DIR to that folder" % e.strerror)
        return 2
    missing = missing_in(python, reqs)
    if missing:
        if os.environ.get("CLASSROOM50_NO_INSTALL") == "1":
            say("missing, and installing is switched off: " + ", ".join(missing))
            return 2
        try:
            python = install(python, missing)
        except (OSError, subprocess.CalledProcessError) as e:
            say("could not install what the grader needs: %s" % e)
            return 2
        still = missing_in(python, reqs)
        if still:
            say("still missing after installing: " + ", ".join(still))
            return 2
    else:
        say("every requirement is already installed; nothing to install")
    # Isolated (-I: no working directory, no PYTHON* variables, no user site): the bundle
    # folder is put first on the path by hand, the student's checkout is only read as data.
    command = [python, "-I", "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
               "from autograder.platforms.classroom50.run import main; sys.exit(main())", BUNDLE,
               "-a", os.path.join(BUNDLE, ASSIGNMENT_DIR), "--checkout", os.getcwd()]
    return subprocess.call(command, cwd=BUNDLE)


if __name__ == "__main__":
    sys.exit(main())
