"""`autograder lint`: authoring mistakes caught before students see them.

Each finding names the file, the line and the fix. Checked:

* `assignment.toml`: tables and keys the grader does not know (`[limit]` for `[limits]` would
  otherwise be ignored without a word), and the required keys;
* each question file: its `name` (and the name given to `Question(...)`) is the question's id
  (else its snapshots are recorded under the other name and every student is told the grader
  could not run the case); a hidden case carries points; its cases give no more than its
  `points` (otter refuses such a file);
* the forbidden routines: the `[routines]` table and every forbidden entry, of assignment.toml
  and of the question files, stands for something that is refused (`lint_routines.py`);
* each question's `functions` are defined by the template (else the notebook gets a stub cell
  for a function students were never given);
* each public case's snapshot exists and, when the reference is at hand, is what the reference
  records today (stale snapshots make public cases fail as grader errors);
* every case, hidden ones included, names a function the template defines and, when the
  reference is at hand, passes against it (`lint_cases.py`) with inputs a student's process
  can be sent (`travel.py`);
* each platform's settings (its table of `assignment.toml`), by the platform's own lint
  (`platforms/<name>/__init__.py`: Gradescope's `hidden_visibility` keeps hidden points out of
  the total students see before grades are published);
* with the reference at hand, the catalogue of known mistakes (`lint_catalogue.py`): its rules
  can ship and its table of outcomes on the public cases is fresh;
* the written questions of `written.toml` (`lint_written.py`);
* with `mutants` (opt-in: it takes minutes), the mutants of the reference that no case
  catches (`mutants.py`, as `autograder mutants` finds them).

Only `ast` and `tomllib` read the files, except for the staleness check, which runs the
reference on the public cases as `autograder snapshot` does (nothing is written).
"""
from __future__ import annotations

import ast
import difflib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

from ..model.assignment import resolve_config_path, find_assignment_root, parse_answers, parse_api
from ..model.limits import Limits
from ..platforms.registry import lint_settings, settings_tables
from .lint_written import lint_written, toml_finding
from .paths import project_relative, project_root_of, shown_assignment
from .lint_cases import function_names
from .lint_routines import (entry_findings, question_file_entries, routine_findings,
                            table_of)

TOP_KEYS = {"name", "title", "student_file", "template", "reference", "mistakes",
            "written_answers"}
REQUIRED = ("name", "student_file", "template")
# Tables and their keys; None: any key (`[outputs]` is keyed by function names).
# The engine's own tables; each platform adds the one it reads (`tables`).
ENGINE_TABLES: dict[str, set[str] | None] = {
    "outputs": None,
    "integrity": {"on_tamper"},
    "limits": {f.name for f in fields(Limits)},
    "question": {"id", "functions", "answers", "forbidden"},
    # The library routines questions may forbid: keyed by routine id (`lint_routines.py`).
    "routines": None,
    "student": {"bundle_url"},
    # Written by `autograder build` into public bundles (platforms/public_only.py).
    "hidden_cases": {"cases", "points", "max_score", "points_by_question"},
}


def tables() -> dict[str, set[str] | None]:
    """Every table `assignment.toml` may hold, with its keys (None: any key)."""
    return {**ENGINE_TABLES, **settings_tables()}


@dataclass
class LintError:
    file: Path
    line: int
    message: str
    fix: str
    # The author's project (the folder two levels above the assignment's): every path said is
    # relative to it, so no message prints where the project sits on the author's machine.
    base: Path | None = None

    def __str__(self) -> str:
        return f"{self._shown(self.file)}:{self.line}: {self._scrubbed(self.message)}; " \
               f"fix: {self._scrubbed(self.fix)}"

    def _shown(self, path: Path) -> str:
        return project_relative(path, self.base) if self.base is not None else str(path)

    def _scrubbed(self, text: str) -> str:
        """`text` with the project's own absolute path taken out of any path it quotes (a
        library's error message may quote one)."""
        if self.base is None:
            return text
        base = str(Path(os.path.abspath(self.base)))
        return text.replace(base + os.sep, "").replace(base, ".")


# ------------------------------------------------------------------ assignment.toml

class _TomlLines:
    """Where tables and keys are in an assignment.toml (tomllib gives no line numbers)."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")

    def __init__(self, text: str):
        self.tables: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        table, index, counts = "", 0, {}
        for n, line in enumerate(text.splitlines(), 1):
            m = self._HEADER.match(line)
            if m:
                table = m.group(2).strip().strip("\"'")
                index = counts.get(table, -1) + 1 if m.group(1) == "[[" else 0
                counts[table] = index
                self.tables.setdefault((table, index), n)
                continue
            k = self._KEY.match(line)
            if k:
                self.keys.setdefault((table, index, k.group(1).strip("\"'")), n)

    def table(self, name: str, index: int = 0) -> int:
        return self.tables.get((name, index), 1)

    def key(self, table: str, key: str, index: int = 0) -> int:
        return self.keys.get((table, index, key), self.table(table, index) if table else 1)


def _suggest(word: str, known) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _check_toml(path: Path, config: dict, where: _TomlLines) -> list[LintError]:
    errors = []
    known = tables()
    for key, value in config.items():
        if isinstance(value, (dict, list)) and key in known:
            continue
        if key in TOP_KEYS:
            continue
        if isinstance(value, (dict, list)) and key not in TOP_KEYS:
            errors.append(LintError(path, where.table(key), f"unknown table [{key}]"
                                    f"{_suggest(key, known)}",
                                    f"rename it to one of [{'], ['.join(sorted(known))}], "
                                    "or remove it"))
        else:
            errors.append(LintError(path, where.key("", key), f"unknown key `{key}`"
                                    f"{_suggest(key, TOP_KEYS)}",
                                    f"use one of {', '.join(sorted(TOP_KEYS))}, or remove it"))
    for key in REQUIRED:
        if key not in config:
            errors.append(LintError(path, 1, f"`{key}` is missing",
                                    f"add `{key} = \"...\"` before the first table"))
    for table, keys in known.items():
        value = config.get(table)
        if value is None or keys is None:
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            for key in item:
                if key not in keys:
                    errors.append(LintError(
                        path, where.key(table, key, i),
                        f"unknown key `{key}` in [{table}]{_suggest(key, keys)}",
                        f"use one of {', '.join(sorted(keys))}, or remove it"))
    if "question" in config and not isinstance(config["question"], list):
        errors.append(LintError(path, where.table("question"), "[question] must be [[question]]",
                                "write each question as a [[question]] table"))
    return errors


# ------------------------------------------------------------------ question files

def _is_test_case(dec: ast.expr) -> bool:
    func = dec.func if isinstance(dec, ast.Call) else dec
    return (isinstance(func, ast.Name) and func.id == "test_case") or (
        isinstance(func, ast.Attribute) and func.attr == "test_case")


def _keyword(call: ast.Call, name: str, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _public_snapshot_keys(tree: ast.Module) -> list[tuple[str, int]]:
    """(key, line) of `snapshot("key")` in the public cases."""
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        decs = [d for d in node.decorator_list if _is_test_case(d) and isinstance(d, ast.Call)]
        if not decs or any(isinstance(h := _keyword(d, "hidden", 2), ast.Constant) and h.value
                           for d in decs):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) \
                    and sub.func.id == "snapshot" and sub.args \
                    and isinstance(sub.args[0], ast.Constant) \
                    and isinstance(sub.args[0].value, str):
                found.append((sub.args[0].value, sub.lineno))
    return found


def _check_question_file(qid: str, path: Path, source: str, table=None) -> list[LintError]:
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [LintError(path, e.lineno or 1, f"syntax error: {e.msg}", "correct the syntax")]
    errors = []
    name_line, file_points = None, False
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target == "points":
                file_points = True
            if target == "name":
                name_line = node.lineno
                value = node.value
                if not (isinstance(value, ast.Constant) and value.value == qid):
                    shown = ast.unparse(value)
                    errors.append(LintError(
                        path, node.lineno, f"the question file's name is {shown}, but its id "
                        f"in assignment.toml is {qid!r} (snapshots would be recorded under the "
                        "other name and every student told the grader could not run the case)",
                        f"write `name = \"{qid}\"`"))
    if name_line is None:
        errors.append(LintError(path, 1, "the question file has no `name`",
                                f"add `name = \"{qid}\"` at the top level"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "Question" and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value != qid:
            errors.append(LintError(path, node.lineno, f"Question({node.args[0].value!r}) does "
                                    f"not name the question {qid!r}",
                                    f"write `Question(name, ...)` or `Question(\"{qid}\", ...)`"))
    errors += _check_forbidden(path, tree, table)
    errors += _check_points(path, tree)
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not (_is_test_case(dec) and isinstance(dec, ast.Call)):
                continue
            hidden = _keyword(dec, "hidden", 2)
            if not (isinstance(hidden, ast.Constant) and hidden.value):
                continue
            points = _keyword(dec, "points", 1)
            zero = isinstance(points, ast.Constant) and (points.value is None or (
                isinstance(points.value, (int, float)) and points.value <= 0))
            if zero or (points is None and not file_points):
                errors.append(LintError(path, dec.lineno, f"the hidden case {node.name} has no "
                                        "points (it can fail without costing anything)",
                                        "give it `points=` greater than 0, or make it public"))
    return errors


def _number(node: ast.expr | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _check_points(path: Path, tree: ast.Module) -> list[LintError]:
    """The file's `points` against its cases' (otter's rule): cases may not give more than the
    file allows, or otter refuses to load it. (Fewer is how a student bundle's copy reads once
    its hidden cases are cut out: a question is worth what its cases give.)"""
    total = line = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "points":
            total, line = _number(node.value), node.lineno
    if total is None:
        return []
    given = 0.0
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if _is_test_case(dec) and isinstance(dec, ast.Call):
                points = _keyword(dec, "points", 1)
                given += _number(points) or 0.0
    if given > total:
        return [LintError(path, line, f"the cases give {given:g} points, more than the file's "
                          f"`points = {total:g}` (otter refuses to load the file)",
                          f"write `points = {given:g}`, or lower the cases' points")]
    return []


def _check_forbidden(path: Path, tree: ast.Module, table=None) -> list[LintError]:
    """Each forbidden entry of a `Question(...)` must stand for something that is refused: a
    routine of the assignment's table, or a name the installed libraries have; a typo would
    be refused nowhere (`lint_routines.py`)."""
    from ..sandbox.routines import Table

    table = table if table is not None else Table()
    return [LintError(*f) for line, names in question_file_entries(tree)
            for f in entry_findings(path, line, table, names)]


# ------------------------------------------------------------------ snapshots

# Recorded values agree when they differ by no more than a recording on another machine would
# (float32 sums come out in another order with another thread count).
_TOLERANCE = {"float64": (1e-9, 1e-12)}
_FLOAT32 = (1e-4, 1e-6)


def _close(a, b, tol: tuple[float, float] = _FLOAT32) -> bool:
    """Recorded JSON values agree (numbers within the dtype's tolerance, the rest exactly)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=tol[0], abs_tol=tol[1])
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if isinstance(a.get("dtype"), str):
            tol = _TOLERANCE.get(a["dtype"], _FLOAT32)
        return a.keys() == b.keys() and all(_close(a[k], b[k], tol) for k in a)
    return a == b


def _check_snapshots(root: Path, questions: list[tuple[str, Path]], fresh: dict | None
                     ) -> list[LintError]:
    errors = []
    for qid, test_file in questions:
        try:
            tree = ast.parse(test_file.read_text())
        except (OSError, SyntaxError):
            continue   # reported with the question file
        snap = root / "snapshots" / f"{qid}.json"
        try:
            stored = json.loads(snap.read_text()) if snap.is_file() else None
        except ValueError:
            errors.append(LintError(snap, 1, "the snapshot file is not valid JSON",
                                    "run `autograder snapshot`"))
            continue
        for key, line in _public_snapshot_keys(tree):
            if stored is None or key not in stored:
                errors.append(LintError(test_file, line, f"the public case's snapshot "
                                        f"{qid}/{key} is missing",
                                        f"run `autograder snapshot -a {shown_assignment(root)}`"))
            elif fresh is not None and key in fresh.get(qid, {}) \
                    and not _close(stored[key], fresh[qid][key]):
                errors.append(LintError(test_file, line, f"the public case's snapshot "
                                        f"{qid}/{key} is stale (the reference or the case "
                                        "changed since it was recorded)",
                                        f"run `autograder snapshot -a {shown_assignment(root)}`"))
    return errors


def _record_fresh(root: Path) -> tuple[dict, list[LintError]]:
    """What `autograder snapshot` would record now (nothing written), and the cases, hidden
    ones included, that the reference does not pass (`lint_cases`)."""
    from ..model.assignment import load_assignment
    from .lint_cases import reference_failures
    from .snapshots import record

    assignment = load_assignment(root)
    recorded = record(assignment, include_hidden=True)
    return recorded.entries, [LintError(*f) for f in reference_failures(assignment,
                                                                        recorded.result)]


# ------------------------------------------------------------------ all of it

def lint(name_or_path: str | Path, *, snapshots: bool = True, reference: bool = True,
         mutants: bool = False, mutants_seen: Callable[[Any], None] | None = None
         ) -> list[LintError]:
    """Every authoring mistake found in the assignment. `snapshots`: check the public cases'
    snapshots exist; `reference`: also that they are fresh (runs the reference); `mutants`:
    once nothing else is found, also grade the reference's mutants and report those no case
    catches (`mutants_seen` receives the whole analysis, `mutants.Analysis`)."""
    root = find_assignment_root(name_or_path)
    toml_path = root / "assignment.toml"
    text = toml_path.read_text()
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return _relative_to_project([toml_finding(toml_path, e, LintError)], root)
    where = _TomlLines(text)
    errors = _check_toml(toml_path, config, where)
    errors += [LintError(*f) for f in lint_settings(toml_path, config, where.key)]
    api: dict = {}
    answers: list[str] = []
    template_rel = config.get("template")
    if isinstance(template_rel, str):
        template = resolve_config_path(root, root.parent.parent, template_rel)
        if not template.is_file():
            errors.append(LintError(toml_path, where.key("", "template"),
                                    f"template {template_rel!r} not found",
                                    "give the template's path, relative to this folder or to "
                                    "the project"))
        else:
            source = template.read_text()
            try:
                api, answers = parse_api(source), parse_answers(source)
            except SyntaxError as e:
                errors.append(LintError(template, e.lineno or 1, f"syntax error: {e.msg}",
                                        "correct the syntax"))
    table, table_error = table_of(config)
    if table_error:
        errors.append(LintError(toml_path, where.table("routines"), table_error,
                                "correct the [routines] table"))
    errors += [LintError(*f) for f in routine_findings(
        toml_path, table, lambda rid: where.table(f"routines.{rid}"))]
    questions: list[tuple[str, Path]] = []
    raw_questions = config.get("question") if isinstance(config.get("question"), list) else []
    for i, q in enumerate(raw_questions):
        if not isinstance(q, dict) or not isinstance(q.get("id"), str):
            errors.append(LintError(toml_path, where.table("question", i),
                                    "a [[question]] has no id", "add `id = \"...\"`"))
            continue
        qid = q["id"]
        test_file = root / "tests" / f"{qid}.py"
        if not test_file.is_file():
            errors.append(LintError(toml_path, where.key("question", "id", i),
                                    f"question {qid!r} has no file tests/{qid}.py",
                                    f"write {shown_assignment(root)}/tests/{qid}.py, or correct "
                                    "the id"))
            continue
        questions.append((qid, test_file))
        errors += _check_question_file(qid, test_file, test_file.read_text(), table)
        forbidden = q.get("forbidden", [])
        if isinstance(forbidden, list):
            errors += [LintError(*f) for f in entry_findings(
                toml_path, where.key("question", "forbidden", i), table,
                [n for n in forbidden if isinstance(n, str)])]
        if api:
            errors += [LintError(*f) for f in function_names(test_file, test_file.read_text(),
                                                             api)]
        if api or answers:
            line = where.key("question", "functions", i)
            for fn in q.get("functions", []):
                if fn not in api:
                    errors.append(LintError(
                        toml_path, line, f"question {qid!r} lists the function `{fn}`, which "
                        f"the template does not define{_suggest(fn, api)}",
                        f"define `def {fn}(...)` in the template, or remove it from "
                        "`functions`"))
    taken = {**{f: f"the function `{f}`" for f in api},
             **{a: f"the answer variable `{a}`" for a in answers},
             **{qid: f"the question {qid!r}" for qid, _ in questions}}
    errors += lint_written(root, config, template if api or answers else None, taken,
                           LintError, hidden_material=reference)
    if snapshots:
        fresh = None
        if reference and not errors and config.get("reference"):
            ref = resolve_config_path(root, root.parent.parent, config["reference"])
            if ref.is_file():
                try:
                    fresh, failures = _record_fresh(root)
                    errors += failures
                except Exception as e:  # noqa: BLE001 - the reference is the instructor's code
                    errors.append(LintError(ref, 1, f"running the reference on the public "
                                            f"cases failed ({type(e).__name__}: {e})",
                                            "make the reference importable and correct"))
        errors += _check_snapshots(root, questions, fresh)
        if fresh is not None and not errors:
            from .lint_catalogue import mistake_errors

            errors += [LintError(*found) for found in mistake_errors(root)]
    if mutants and reference and not errors and config.get("reference"):
        from ..model.assignment import load_assignment
        from .mutants import analyse, lint_findings

        analysis = analyse(load_assignment(root))
        if mutants_seen is not None:
            mutants_seen(analysis)
        errors += [LintError(*found) for found in lint_findings(analysis)]
    return _relative_to_project(errors, root)


def report(errors: list[LintError]) -> str:
    return "\n".join(str(e) for e in errors)


def _relative_to_project(errors: list[LintError], root: Path) -> list[LintError]:
    for e in errors:
        e.base = project_root_of(root)
    return errors
