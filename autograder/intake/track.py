"""Which assignment a file is for (`autograder check FILE` without `-a`): the one whose student
file has its name, else the only one there is (a student bundle carries one), else the one
whose template's functions the file's functions match (parameter names: `softmax(x, dim=-1)` is
the torch track's, `softmax(x, axis=-1)` the NumPy track's), then the one whose libraries it
imports. The file is parsed, never run. Every assignment `-a NAME` can name is a candidate: the
project's `assignments/` and the current folder's (an author's course folder)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Sequence

from ..model.assignment import Assignment, AssignmentError, load_assignment
from ..model.project import ASSIGNMENTS_DIR
from ..model.safetext import shown_path


def _functions(tree: ast.Module) -> dict[str, list[str]]:
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = [a.arg for a in node.args.posonlyargs + node.args.args]
    return out


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def likely_assignment(source: str, assignments: Sequence[Assignment]) -> Assignment | None:
    """The one assignment `source` (a file's code, or a notebook's cells joined) fits best, or
    None when it cannot be told (no function matches, or a tie)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    mine, imported = _functions(tree), _imports(tree)
    scores = []
    for a in assignments:
        same = sum(1 for name, sig in a.api.items() if mine.get(name) == list(sig.params))
        try:
            theirs = _imports(ast.parse(a.template.read_text()))
        except (OSError, SyntaxError, ValueError):
            theirs = set()
        scores.append((same, len(imported & theirs & {"torch", "numpy"}), a))
    scores.sort(key=lambda s: s[:2], reverse=True)
    if not scores or scores[0][0] == 0 or (len(scores) > 1 and scores[0][:2] == scores[1][:2]):
        return None
    return scores[0][2]


def known_assignments() -> list[Assignment]:
    """Every assignment `-a NAME` can name: the folders of the project's `assignments/`, then
    those of the current folder's (a name found in both is the project's, as `-a` finds it)."""
    names: dict[str, Path] = {}
    for folder in (ASSIGNMENTS_DIR, Path("assignments")):
        if folder.is_dir():
            for d in sorted(folder.iterdir()):
                if (d / "assignment.toml").is_file():
                    names.setdefault(d.name, d)
    return [load_assignment(d) for d in names.values()]


def assignment_for_file(path: Path | None, requested: str | None) -> Assignment:
    """The assignment asked for, else the one `path` is for (see the module's docstring);
    AssignmentError, saying how to ask, when that cannot be told."""
    if requested:
        return load_assignment(requested)
    known = known_assignments()
    for a in known:
        if path is not None and Path(a.student_file).stem == path.stem:
            return a
    if len(known) == 1:
        return known[0]
    if path is not None and path.is_dir():     # the folder of one assignment's file
        inside = [a for a in known if (path / a.student_file).is_file()]
        if len(inside) == 1:
            return inside[0]
    found = None
    if path is not None and path.is_file():
        from .submissions import UnreadableSubmission, read_submission

        try:
            sub = read_submission(path)
            source = sub.source if sub.cells is None else \
                "\n".join(cell.source for cell in sub.cells)
            found = likely_assignment(source, known)
        except (UnreadableSubmission, OSError):
            found = None
    if found is not None:
        return found
    what = f"which assignment {shown_path(path)} is for (neither its name nor its functions " \
           "say)" if path is not None else "which assignment to check"
    choices = ", ".join(f"-a {a.name}" for a in known) or "none found"
    raise AssignmentError(f"cannot tell {what}: give the assignment ({choices})")
