"""Lint of the forbidden routines: the `[routines]` table and every question's forbidden list.

A forbidden entry must stand for something that is refused: a routine of the table (its id or
one of its names), or a name the installed libraries resolve (a torch function, method or
module, `aten::<op>`, a NumPy or SciPy function: `routines.derive`). A typo would be refused
nowhere. The table's operators (its `aten` lists and signatures) must exist in the installed
torch when it is at least the torch the project pins, and each operator of a signature must
have a kernel of its own at a CPU key (a composite's decomposition never meets the watch).
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

from ..sandbox.forbidden_ops import missing_ops, overloads
from ..model.routines import RoutineError, Routines, parse_routines
from ..sandbox.routines import Table, bare_op, is_op_name, is_python_name

Finding = tuple[Path, int, str, str]
TABLE_FIX = "correct the name, or declare the routine in assignment.toml's [routines]"


def table_of(config: dict) -> tuple[Table, str | None]:
    """What the assignment's routines refuse, and the table's error (then an empty table)."""
    try:
        return Table(Routines(parse_routines(config.get("routines")))), None
    except RoutineError as e:
        return Table(), str(e)


def _importable(name: str) -> bool:
    """Whether the package a dotted name starts with is installed here."""
    try:
        importlib.import_module(name.split(".")[0])
        return True
    except Exception:  # noqa: BLE001 - not installed, or broken: nothing to say about it here
        return False


def refused_nowhere(table: Table, entry: str) -> bool:
    """Whether a forbidden entry would be refused by nothing (a typo, an unknown operator)."""
    if table.declared.routine_of(entry) is not None or entry.startswith("autograd."):
        return False
    if is_op_name(entry):
        return not overloads(table.plan(entry).ops[0])
    if is_python_name(entry):
        if not _importable(entry):
            return False         # the package is not installed here; grading may have it
        from ..sandbox.guard import python_target

        return python_target(entry) is None
    plan = table.plan(entry)
    return not (plan.ops or plan.python)


def _own_kernel(overload: str) -> bool:
    """Whether `aten::<overload>` has a kernel of its own for CPU data (not a composite that
    runs its decomposition's operators instead)."""
    import torch

    has = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    if has is None:
        return True
    return any(has(f"aten::{overload}", key) for key in ("CPU", "CompositeExplicitAutograd"))


def routine_findings(path: Path, table: Table, line_of) -> list[Finding]:
    """The table's own problems: operators the installed torch lacks, signature operators that
    no kernel of theirs would see, names that resolve to nothing."""
    found: list[Finding] = []
    for r in table.declared.routines.values():
        line = line_of(r.id)
        for op in missing_ops(bare_op(o) for o in r.aten):
            found.append((path, line, f"[routines.{r.id}] lists aten::{op}, which the "
                          "installed torch does not have", "remove it, or install the torch "
                          "the grader pins"))
        for op in missing_ops(o for g in r.signature for o in g):
            found.append((path, line, f"[routines.{r.id}]'s signature lists aten::{op}, which "
                          "the installed torch does not have", "remove it, or install the "
                          "torch the grader pins"))
        for op in sorted({o for g in r.signature for o in g}):
            if overloads(op) and not any(_own_kernel(o) for o in overloads(op)):
                found.append((path, line, f"[routines.{r.id}]'s signature lists aten::{op}, "
                              "which runs no kernel of its own on a CPU (a composite: its "
                              "decomposition's operators run instead)", "list the operators "
                              "it decomposes into"))
        for name in r.names:
            if name.startswith("torch.") and not table.plan(name).ops and \
                    refused_nowhere(Table(), name):
                found.append((path, line, f"[routines.{r.id}] names `{name}`, which is not in "
                              "the installed torch", "correct the name"))
    return found


def entry_findings(path: Path, line: int, table: Table, entries: list[str]) -> list[Finding]:
    return [(path, line, f"the forbidden routine `{e}` is neither a routine of [routines] nor "
             "a name the installed libraries have, so nothing would refuse it", TABLE_FIX)
            for e in entries if refused_nowhere(table, e)]


def question_file_entries(tree: ast.Module) -> list[tuple[int, list[str]]]:
    """(line, names) of each `Question(..., forbidden=[...])` of a question file."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "Question"):
            continue
        value = next((k.value for k in node.keywords if k.arg == "forbidden"), None)
        if isinstance(value, (ast.List, ast.Tuple)):
            out.append((node.lineno, [e.value for e in value.elts if isinstance(e, ast.Constant)
                                      and isinstance(e.value, str)]))
    return out
