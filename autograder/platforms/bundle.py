"""What every output of `autograder build` is made of: question files with their hidden cases
cut out, the assignment folder (its `assignment.toml` rewritten to point at the copies), a copy
of the engine, pinned requirements, and reproducible zips.
"""
from __future__ import annotations

import ast
import json
import re
import shutil
import tomllib
import zipfile
from pathlib import Path

from ..model.assignment import Assignment
from .gradescope.run import hidden_visibility
from ..model.written_spec import public_toml, written_file
from ..model.project import (ENGINE_DIR, PYPROJECT, TORCH_CPU_INDEX, constraint_pins, dependencies,
                       engine_files, normalize, requirement_name)


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


def _points(dec: ast.expr, where: str) -> float:
    """A case's `points=` (None or missing counts 0, as when grading), read without running
    the question file: the build never executes one in the grading process."""
    if not isinstance(dec, ast.Call):
        return 0.0
    values = [kw.value for kw in dec.keywords if kw.arg == "points"]
    if len(dec.args) >= 2:   # test_case(name, points, ...)
        values.append(dec.args[1])
    for v in values:
        if isinstance(v, ast.Constant) and v.value is None:
            continue
        if not isinstance(v, ast.Constant) or isinstance(v.value, bool) \
                or not isinstance(v.value, (int, float)):
            raise BuildError(f"{where}: `points=` must be a literal number")
        return float(v.value)
    return 0.0


def hidden_points(source: str, where: str = "question file") -> tuple[int, float]:
    """(how many hidden cases, their points) of a question file."""
    count, points = 0, 0.0
    for name, decs in _case_decorators(source):
        if any(_hidden(d, f"{where}, {name}") for d in decs):
            count += 1
            points += max(_points(d, f"{where}, {name}") for d in decs)
    return count, points


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


# The comment lines right above a key or a table header (no blank line between) are that
# key's or table's: they leave a bundle with it.
_COMMENTS_ABOVE = r"(?:^[ \t]*#.*\n)*"
_BLANK_LINES = r"(?:^[ \t]*\n)*"
_NEXT_TABLE = _BLANK_LINES + _COMMENTS_ABOVE + r"^\s*\["


def rewrite_toml(text: str, values: dict[str, str | None]) -> str:
    """Set (or, with None, drop, with its comment) top-level string keys of an assignment.toml,
    keeping the rest."""
    first_table = re.search(r"^\s*\[", text, re.M)
    head_end = first_table.start() if first_table else len(text)
    # A comment block right above the first table is the table's, not the head's.
    head_end = re.search(_COMMENTS_ABOVE + r"\Z", text[:head_end], re.M).start()
    head, tail = text[:head_end], text[head_end:]
    for key, value in values.items():
        key_line = rf"^{re.escape(key)}\s*=.*$\n?"
        pattern = re.compile((_COMMENTS_ABOVE if value is None else "") + key_line, re.M)
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


def drop_toml_tables(text: str, tables: tuple[str, ...]) -> str:
    """An assignment.toml without the top-level tables named: each one's header, keys, the
    comment lines right above its header and the blank lines before, up to the next table (or
    its comment)."""
    for table in tables:
        header = rf"^\[{re.escape(table)}\][ \t]*(?:#.*)?\n"
        body = rf"(?:(?!{_NEXT_TABLE}).*(?:\n|\Z))*"
        pattern = re.compile(_BLANK_LINES + _COMMENTS_ABOVE + header + body, re.M)
        text = pattern.sub("", text, count=1)
    parsed = tomllib.loads(text)
    left = [t for t in tables if t in parsed]
    if left:
        raise BuildError(f"could not drop [{left[0]}] from assignment.toml")
    return text


# Keys of assignment.toml naming instructor-only files: never in a student bundle; in a grader's
# bundle they travel in the `reference/` package.
GRADER_ONLY_KEYS = ("reference", "mistakes", "written_answers")
# Tables of assignment.toml that only graders read (Gradescope's settings): not in the student
# bundle. Like those keys, they leave it with the comments right above them.
GRADER_ONLY_TABLES = ("gradescope",)


def grader_only_files(assignment: Assignment) -> dict[str, Path]:
    """{key: file} for the instructor-only files this assignment names (and has)."""
    from ..model.assignment import resolve_config_path

    base = assignment.root.parent.parent
    files = {}
    for key in GRADER_ONLY_KEYS:
        rel = assignment.config.get(key)
        if rel:
            path = resolve_config_path(assignment.root, base, rel)
            if path.is_file():
                files[key] = path
    return files


def write_assignment_folder(assignment: Assignment, dest: Path, *, hidden: bool,
                            reference: bool, grader_tables: bool = True) -> Path:
    """The assignment's data in `dest`: assignment.toml, tests/, snapshots/, template/ and,
    when `reference`, reference/ (a package with the reference and other instructor-only
    files); hidden cases only when `hidden`; the graders' tables of assignment.toml only when
    `grader_tables`."""
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
    toml_text = rewrite_toml((assignment.root / "assignment.toml").read_text(), values)
    if not grader_tables:
        toml_text = drop_toml_tables(toml_text, GRADER_ONLY_TABLES)
    if not hidden:
        toml_text += left_out_table(assignment)
    (dest / "assignment.toml").write_text(toml_text)
    for rel, content in question_files(assignment, hidden=hidden).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(content)
    written = written_file(assignment.root)
    if written.is_file():
        # The rubric goes with the hidden cases: a public bundle has prompts and points.
        (dest / written.name).write_text(written.read_text() if hidden else
                                         public_toml(assignment.written))
    return dest


def _toml_number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def left_out_table(assignment: Assignment) -> str:
    """The `[hidden_cases]` table of a public bundle's assignment.toml: how many hidden cases
    (and points) were cut out, and the full assignment's points, so that every platform running
    the public cases can say these are not the grade (see `platforms/public_only.py`). Empty
    when the assignment has no hidden case."""
    from .public_only import TABLE

    if TABLE in assignment.config:
        raise BuildError(f"[{TABLE}] is written by `autograder build`; remove it from "
                         f"{assignment.root / 'assignment.toml'}")
    by_question, cases, total = {}, 0, 0.0
    for q in assignment.questions:
        where = f"{assignment.name}/tests/{q.test_file.name}"
        source = q.test_file.read_text()
        count, points = hidden_points(source, where)
        cases += count
        by_question[q.id] = points
        total += sum(max(_points(d, f"{where}, {name}") for d in decs)
                     for name, decs in _case_decorators(source))
    if not cases:
        return ""
    lines = ["", f"[{TABLE}]",
             "# Written by `autograder build`: the hidden cases this bundle leaves out. They are",
             "# graded later, so what this bundle grades is the public cases only.",
             f"cases = {cases}",
             f"points = {_toml_number(sum(by_question.values()))}",
             f"max_score = {_toml_number(total)}", "",
             f"[{TABLE}.points_by_question]"]
    lines += [f"{json.dumps(qid)} = {_toml_number(p)}" for qid, p in by_question.items()]
    return "\n".join(lines) + "\n"


def _case_decorators(source: str) -> list[tuple[str, list[ast.expr]]]:
    """(function name, its `@test_case` decorators) for each case of a question file."""
    out = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decs = [d for d in node.decorator_list if _is_test_case(d)]
            if decs:
                out.append((node.name, decs))
    return out


def question_files(assignment: Assignment, *, hidden: bool) -> dict[str, bytes]:
    """{"tests/<q>.py" and "snapshots/<q>.json": content}; public cases only unless `hidden`.

    Snapshots keep only the entries that the shipped question files use; the table of known
    mistakes' outcomes on the public cases goes along.
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
    # Known mistakes' outcomes on the public inputs (no code, no hidden case), so that every
    # bundle's check names mistakes as the grade does (autograder.diagnose.table).
    if assignment.mistake_table.is_file():
        files[f"snapshots/{assignment.mistake_table.name}"] = assignment.mistake_table.read_bytes()
    return files


def write_engine(dest: Path) -> Path:
    """A copy of the engine package (no caches)."""
    target = dest / "autograder"
    for f in engine_files():
        rel = f.relative_to(ENGINE_DIR)
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target / rel)
    return target


# ------------------------------------------------------------------ requirements

def pinned_requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """The engine's dependencies (pyproject.toml), pinned as in constraints.txt."""
    if not PYPROJECT.is_file():
        raise BuildError("pyproject.toml not found: build from the project's checkout")
    pins = constraint_pins()
    out = []
    for dep in dependencies() + list(extra):
        name = requirement_name(dep)
        version = pins.get(normalize(name))
        out.append(f"{name}=={version}" if version else dep)
    return out


# What students (and Classroom 50's public runs) install: ranges, so a student keeps the torch and
# numpy they already have (Colab, their own Jupyter). The lowest versions are the ones the
# student path is tested with; graders keep the exact pins above.
STUDENT_RANGES = {"torch": "torch>=2.4", "numpy": "numpy>=1.26"}
# otter-grader needs pandas, and pandas 3 needs numpy 2: without this cap, installing otter-grader
# would upgrade a student's numpy 1.26 (which torch builds before 2.5 need).
STUDENT_EXTRA = ("pandas>=2,<3",)


def student_requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """The engine's dependencies as ranges: torch and numpy from the oldest supported version,
    the rest as pyproject.toml states them (lower bounds), plus what keeps numpy where it is."""
    if not PYPROJECT.is_file():
        raise BuildError("pyproject.toml not found: build from the project's checkout")
    out = []
    for dep in dependencies() + list(STUDENT_EXTRA) + list(extra):
        name = normalize(requirement_name(dep))
        out.append(STUDENT_RANGES.get(name, dep.split("#", 1)[0].strip()))
    return out


def student_requirements_text(reqs: list[str]) -> str:
    lines = ["# Ranges, not pins: pip keeps the torch (2.4 or newer) and numpy (1.26 or newer) you",
             "# already have. Where torch is missing, PyTorch's CPU index gives the CPU build",
             "# (no multi-GB CUDA download).",
             f"--extra-index-url {TORCH_CPU_INDEX}"]
    return "\n".join(lines + reqs) + "\n"


def split_torch_pin(reqs: list[str]) -> tuple[str | None, list[str]]:
    """(torch's pin without a local tag, the other requirements)."""
    torch, rest = None, []
    for r in reqs:
        if normalize(requirement_name(r)) == "torch":
            torch = r.split("+", 1)[0]
        else:
            rest.append(r)
    return torch, rest


# ------------------------------------------------------------------ zips

def zip_folder(folder: Path, zip_path: Path, executables: tuple[str, ...] = (),
               top: str = "") -> Path:
    """Zip `folder`'s contents (paths relative to it, under the folder `top` when given),
    reproducibly: fixed dates, sorted."""
    if zip_path.exists():
        zip_path.unlink()
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = f.relative_to(folder).as_posix()
            if "__pycache__" in rel.split("/"):
                continue
            info = zipfile.ZipInfo(f"{top}/{rel}" if top else rel,
                                   date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if rel in executables else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, f.read_bytes())
    return zip_path


def fresh_folder(path: Path) -> Path:
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
