"""`autograder build`: what students get, and what graders run elsewhere.

Three outputs, all made from the assignment folder and the engine:

* the student bundle (`<name>-student/` and a zip of it): the template `.py` and notebook, the
  engine, and the assignment's PUBLIC question files and snapshots. Hidden cases are cut out of
  the question files by their syntax tree (every `@test_case` function marked hidden), and
  no reference code is copied, so `autograder check` and `grader.check` run from snapshots.
* a Gradescope autograder zip (`<name>-gradescope.zip`): `setup.sh`, `run_autograder`, the
  engine and the full assignment (hidden cases and the reference included); it grades with the
  sandboxed `autograder grade` and converts its JSON (`autograder/gradescope.py`).
* an otter-grader autograder zip (`<name>-otter.zip`), made with `otter generate`, for
  instructors who already run otter. Otter copies its `files/` into the submission's folder
  next to `tests/`, so the assignment's `assignment.toml`, snapshots, template and reference
  travel as `files/` and are found next to the tests, as here. The reference and the engine are
  folders (packages), never loose `.py` files, which otter would take for a second submission.

Every bundle keeps the assignment's data in one folder whose `assignment.toml` points at a copy
of the template (`template/`) and, where shipped, of the reference (`reference/`).
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import shutil
import tempfile
import tomllib
import zipfile
from pathlib import Path

from .assignment import PROJECT_ROOT, Assignment
from .gradescope import hidden_visibility
from .notebook import notebook_text, student_assignment_dir

ENGINE_DIR = Path(__file__).resolve().parent
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


class BuildError(Exception):
    """The assignment cannot be built as asked (an instructor's problem)."""


# ------------------------------------------------------------------ question files

def _is_test_case(dec: ast.expr) -> bool:
    func = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(func, ast.Name) and func.id == "test_case") or (
        isinstance(func, ast.Attribute) and func.attr == "test_case")


def _hidden(dec: ast.expr, where: str) -> bool:
    if not isinstance(dec, ast.Call):
        return False
    values = [kw.value for kw in dec.keywords if kw.arg == "hidden"]
    if len(dec.args) >= 3:   # test_case(name, points, hidden, ...)
        values.append(dec.args[2])
    if any(kw.arg is None for kw in dec.keywords):
        raise BuildError(f"{where}: cannot tell whether a case is hidden (**kwargs)")
    for v in values:
        if not isinstance(v, ast.Constant):
            raise BuildError(f"{where}: `hidden=` must be a literal True or False")
    return any(bool(v.value) for v in values)


def case_visibility(source: str, where: str = "question file") -> dict[str, bool]:
    """{test function name: hidden?} for every `@test_case` function of a question file."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decs = [d for d in node.decorator_list if _is_test_case(d)]
            if decs:
                out[node.name] = any(_hidden(d, f"{where}, {node.name}") for d in decs)
    return out


def strip_hidden_cases(source: str, where: str = "question file") -> str:
    """The question file without its hidden cases: their functions are cut out, lines intact."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut: list[tuple[int, int]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_test_case(d) and _hidden(d, f"{where}, {node.name}")
                for d in node.decorator_list):
            start = min(d.lineno for d in node.decorator_list) - 1
            end = node.end_lineno
            while end < len(lines) and not lines[end].strip():   # blank lines after it
                end += 1
            cut.append((start, end))
    for start, end in reversed(cut):
        del lines[start:end]
    out = "".join(lines).rstrip("\n") + "\n"
    left = case_visibility(out, where)
    if any(left.values()):
        raise BuildError(f"{where}: hidden cases are left after stripping")
    return out


def snapshot_keys(source: str) -> set[str] | None:
    """Keys of `snapshot("key")` calls; None when some key is not a literal (keep them all)."""
    keys: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "snapshot":
            if node.args and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str):
                keys.add(node.args[0].value)
            else:
                return None
    return keys


# ------------------------------------------------------------------ assignment folders

def _toml_string(value: str) -> str:
    return json.dumps(value)   # a JSON string is a valid TOML basic string for plain paths


def rewrite_toml(text: str, values: dict[str, str | None]) -> str:
    """Set (or, with None, drop) top-level string keys of an assignment.toml, keeping the rest."""
    first_table = re.search(r"^\s*\[", text, re.M)
    head_end = first_table.start() if first_table else len(text)
    head, tail = text[:head_end], text[head_end:]
    for key, value in values.items():
        pattern = re.compile(rf"^{re.escape(key)}\s*=.*$\n?", re.M)
        line = "" if value is None else f"{key} = {_toml_string(value)}\n"
        if pattern.search(head):
            head = pattern.sub(line.replace("\\", "\\\\"), head, count=1)
        elif line:
            head = head.rstrip("\n") + "\n" + line + "\n"
    out = head + tail
    parsed = tomllib.loads(out)
    for key, value in values.items():
        if parsed.get(key) != value:
            raise BuildError(f"could not set {key!r} in assignment.toml")
    return out


# Keys of assignment.toml naming instructor-only files: never in a student bundle; in a grader's
# bundle they travel in the `reference/` package.
GRADER_ONLY_KEYS = ("reference", "mistakes")


def grader_only_files(assignment: Assignment) -> dict[str, Path]:
    """{key: file} for the instructor-only files this assignment names (and has)."""
    from .assignment import _resolve

    base = assignment.root.parent.parent
    files = {}
    for key in GRADER_ONLY_KEYS:
        rel = assignment.config.get(key)
        if rel:
            path = _resolve(assignment.root, base, rel)
            if path.is_file():
                files[key] = path
    return files


def write_assignment_folder(assignment: Assignment, dest: Path, *, hidden: bool,
                            reference: bool) -> Path:
    """The assignment's data in `dest`: assignment.toml, tests/, snapshots/, template/ and,
    when `reference`, reference/ (a package with the reference and other instructor-only
    files); hidden cases only when `hidden`."""
    dest.mkdir(parents=True, exist_ok=True)
    template_rel = f"template/{assignment.template.name}"
    values: dict[str, str | None] = {"template": template_rel}
    values.update({key: None for key in GRADER_ONLY_KEYS if key in assignment.config})
    (dest / "template").mkdir(exist_ok=True)
    shutil.copyfile(assignment.template, dest / template_rel)
    if reference:
        extra = grader_only_files(assignment)
        if "reference" not in extra:
            raise BuildError("the reference implementation is missing; it is needed to grade")
        ref_dir = dest / "reference"
        ref_dir.mkdir(exist_ok=True)
        (ref_dir / "__init__.py").write_text(
            '"""Instructor-only: the hidden reference implementation (for graders)."""\n')
        names = [path.name for path in extra.values()]
        if len(set(names)) != len(names) or "__init__.py" in names:
            raise BuildError(f"instructor-only files need distinct names: {', '.join(names)}")
        for key, path in extra.items():
            shutil.copyfile(path, ref_dir / path.name)
            values[key] = f"reference/{path.name}"
    toml_text = (assignment.root / "assignment.toml").read_text()
    (dest / "assignment.toml").write_text(rewrite_toml(toml_text, values))
    for rel, content in question_files(assignment, hidden=hidden).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(content)
    return dest


def question_files(assignment: Assignment, *, hidden: bool) -> dict[str, bytes]:
    """{"tests/<q>.py" and "snapshots/<q>.json": content}; public cases only unless `hidden`.

    Snapshots keep only the entries that the shipped question files use.
    """
    files: dict[str, bytes] = {}
    for q in assignment.questions:
        source = q.test_file.read_text()
        if not hidden:
            source = strip_hidden_cases(source, f"{assignment.name}/tests/{q.test_file.name}")
        files[f"tests/{q.test_file.name}"] = source.encode()
        snap = assignment.snapshot_dir / f"{q.id}.json"
        if snap.is_file():
            data = json.loads(snap.read_text())
            keys = snapshot_keys(source)
            if keys is not None:
                data = {k: v for k, v in data.items() if k in keys}
            if data:
                files[f"snapshots/{snap.name}"] = (
                    json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
    return files


def public_test_files(assignment: Assignment, assignment_dir: str) -> dict[str, bytes]:
    """The public question files and snapshots as shipped to students, keyed by their path in
    a student's copy whose assignment folder is `assignment_dir`."""
    return {f"{assignment_dir}/{rel}": content
            for rel, content in question_files(assignment, hidden=False).items()}


def write_engine(dest: Path) -> Path:
    """A copy of the engine package (no caches)."""
    target = dest / "autograder"
    for f in sorted(p for p in ENGINE_DIR.rglob("*") if p.is_file()):
        rel = f.relative_to(ENGINE_DIR)
        if "__pycache__" in rel.parts or f.suffix in (".pyc", ".pyo"):
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target / rel)
    return target


# ------------------------------------------------------------------ requirements

def pinned_requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """The engine's dependencies (pyproject.toml), pinned as in constraints.txt."""
    pyproject = PROJECT_ROOT / "pyproject.toml"
    constraints = PROJECT_ROOT / "constraints.txt"
    if not pyproject.is_file():
        raise BuildError("pyproject.toml not found: build from the project's checkout")
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"] + list(extra)
    pins = {}
    if constraints.is_file():
        for line in constraints.read_text().splitlines():
            m = re.match(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*(\S+)", line)
            if m:
                pins[_norm(m.group(1))] = m.group(2)
    out = []
    for dep in deps:
        name = re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0]
        version = pins.get(_norm(name))
        out.append(f"{name}=={version}" if version else dep)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _split_torch(reqs: list[str]) -> tuple[str | None, list[str]]:
    """(torch's pin without a local tag, the other requirements)."""
    torch, rest = None, []
    for r in reqs:
        if _norm(re.split(r"[<>=!~; ]", r, maxsplit=1)[0]) == "torch":
            torch = r.split("+", 1)[0]
        else:
            rest.append(r)
    return torch, rest


def _requirements_text(reqs: list[str]) -> str:
    torch, rest = _split_torch(reqs)
    lines = ["# Pinned as in the project's constraints.txt. torch comes from PyTorch's CPU index",
             "# (no CUDA download)."]
    if torch:
        lines += [f"--extra-index-url {TORCH_CPU_INDEX}", torch]
    return "\n".join(lines + rest) + "\n"


# ------------------------------------------------------------------ zips

def zip_folder(folder: Path, zip_path: Path, executables: tuple[str, ...] = ()) -> Path:
    """Zip `folder`'s contents (paths relative to it), reproducibly: fixed dates, sorted."""
    if zip_path.exists():
        zip_path.unlink()
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = f.relative_to(folder).as_posix()
            if "__pycache__" in rel.split("/"):
                continue
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if rel in executables else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, f.read_bytes())
    return zip_path


def _fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def gradescope_settings(assignment: Assignment) -> dict:
    gs = dict(assignment.config.get("gradescope", {}))
    try:
        gs["hidden_visibility"] = hidden_visibility(assignment)
    except ValueError as e:
        raise BuildError(str(e)) from None
    return gs


# ------------------------------------------------------------------ the three builds

STUDENT_README = """\
# {title}

Your starting files:

* `{py}`: the exercises as a Python file;
* `{nb}`: the same exercises as a Jupyter notebook, with an explanation for each question.

Work in whichever you prefer and submit that one file. Each function's docstring states its
contract (shapes, dtypes, what it must return).

## Setup (once)

```sh
python3 -m venv .venv
. .venv/bin/activate            # Windows: .venv\\Scripts\\activate
pip install -r requirements.txt
```

For the notebook you also need Jupyter (JupyterLab, VS Code...) with this environment's kernel.

## Checking your work

From this folder:

```sh
python -m autograder check {py}        # or: python -m autograder check {nb}
python -m autograder check {py} -v     # list the passing cases too
```

In the notebook, run the first code cell once, then the `grader.check("...")` cell under each
question. A question not started says "not implemented yet"; a failing case says what is wrong.

These are the public cases. More cases (other shapes, float64, masks, several heads...) are
graded after you submit, so write general code rather than code that fits these examples.

## What is in this folder

* `{assignment_dir}/`: the public test cases (`tests/`) and their expected values
  (`snapshots/`); `template/` keeps an untouched copy of the template.
* `autograder/`: the checking engine. You do not need to read or change it.
"""


CLASSROOM_INSTALL = ["python -m pip install --upgrade pip", "pip install -r requirements.txt"]


def classroom_workflow(assignment: Assignment) -> str:
    """The GitHub Classroom workflow of a student repository made from the student bundle."""
    from .classroom import workflow_yaml

    return workflow_yaml(assignment, assignment_dir=student_assignment_dir(assignment),
                         install=CLASSROOM_INSTALL)


def shipped_files(assignment: Assignment) -> dict[str, bytes]:
    """Files of a student repository that students must not change: the workflow and the
    public tests. Class grading flags repositories where they differ."""
    from .classroom import WORKFLOW_PATH

    files = {WORKFLOW_PATH: classroom_workflow(assignment).encode()}
    files.update(public_test_files(assignment, student_assignment_dir(assignment)))
    return files


def build_student(assignment: Assignment, out: Path) -> Path:
    """The student bundle folder (and a zip of it next to it); with its GitHub Classroom
    workflow, it is also the template repository of a Classroom assignment."""
    dest = _fresh(out / f"{assignment.name}-student")
    py = assignment.student_file
    nb = Path(py).stem + ".ipynb"
    shutil.copyfile(assignment.template, dest / py)
    (dest / nb).write_text(notebook_text(assignment))
    write_engine(dest)
    adir = student_assignment_dir(assignment)
    write_assignment_folder(assignment, dest / adir, hidden=False, reference=False)
    student_reqs = pinned_requirements(extra=("ipykernel",))
    (dest / "requirements.txt").write_text(_requirements_text(student_reqs))
    (dest / "README.md").write_text(STUDENT_README.format(
        title=assignment.title, py=py, nb=nb, assignment_dir=adir))
    from .classroom import WORKFLOW_PATH

    (dest / WORKFLOW_PATH).parent.mkdir(parents=True, exist_ok=True)
    (dest / WORKFLOW_PATH).write_text(classroom_workflow(assignment))
    zip_folder(dest, out / f"{assignment.name}-student.zip")
    return dest


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


def build_otter(assignment: Assignment, out: Path) -> Path:
    """An otter-grader autograder zip, made by `otter generate`."""
    from otter.generate import main as otter_generate

    settings = gradescope_settings(assignment)
    zip_path = (out / f"{assignment.name}-otter.zip").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        # Otter ships tests/ and copies files/ next to it in the submission's folder: the
        # assignment folder's contents, flattened, make that folder the assignment's root.
        write_assignment_folder(assignment, stage, hidden=True, reference=True)
        write_engine(stage)
        files = sorted(p.name for p in stage.iterdir() if p.name != "tests")
        if any((stage / f).is_file() and f.endswith(".py") for f in files):
            raise BuildError("a loose .py file would break otter's .py submissions")
        torch, rest = _split_torch(pinned_requirements())
        (stage / "requirements.txt").write_text(
            "\n".join([f"--extra-index-url {TORCH_CPU_INDEX}"] + ([torch] if torch else [])
                      + [r for r in rest if not _norm(r).startswith("otter-grader")]) + "\n")
        (stage / "otter_config.json").write_text(json.dumps({
            "lang": "python",
            "show_hidden": settings["hidden_visibility"] != "hidden",
        }, indent=2))
        with contextlib.chdir(stage), contextlib.redirect_stdout(io.StringIO()):
            otter_generate(tests_dir="tests", output_path=str(zip_path),
                           config="otter_config.json", requirements="requirements.txt",
                           files=files, python_version="3.11")
    return zip_path


def build_all(assignment: Assignment, out: Path, *, otter: bool = True) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    built = {"student": build_student(assignment, out),
             "student_zip": out / f"{assignment.name}-student.zip",
             "gradescope": build_gradescope(assignment, out)}
    if otter:
        built["otter"] = build_otter(assignment, out)
    return built
