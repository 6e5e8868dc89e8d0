"""Code that cannot run when the file is graded, which the scan leaves out: it never counts
against a student.

* `if 0:` / `if False:` (and `while` of the same): the body never runs; an `else` does.
* `if __name__ == "__main__":`: the grader imports the file under its module name (`attention`),
  never as the main program, so the block never runs (and an `else` always does; `!=` the other
  way round). This holds only while the source cannot change its own `__name__`: a file that
  stores to `__name__` (by name, as an attribute, through `globals()`/`vars()`/`__dict__` or a
  string `"__name__"`), or that runs code built at run time or updates its globals wholesale,
  gets its main block scanned like any other code.
"""
from __future__ import annotations

import ast

from .budget import Budget
from .folding import Folder

_NAME = "__name__"
_WHOLESALE = {"update", "setdefault", "__setitem__", "__delitem__", "pop", "clear"}
_NAMESPACES = {"globals", "vars", "locals"}
_CODEGEN = {"exec", "eval", "compile"}


def _is_false_constant(test: ast.AST) -> bool:
    return isinstance(test, ast.Constant) and test.value in (0, False) and \
        not isinstance(test.value, str) and test.value is not None


def _main_comparison(test: ast.AST) -> bool | None:
    """True for `__name__ == "__main__"`, False for `!=`, None for anything else."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return None
    sides = (test.left, test.comparators[0])
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == _NAME]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    if len(names) != 1 or len(mains) != 1:
        return None
    if isinstance(test.ops[0], (ast.Eq, ast.Is)):
        return True
    if isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
        return False
    return None


def can_change_own_name(tree: ast.AST, fold: Folder, budget: Budget) -> bool:
    """Could running this source make its own `__name__` "__main__"? One pass over the tree;
    true at the first construct that might."""
    for node in ast.walk(tree):
        budget.step()
        if isinstance(node, ast.Name) and node.id == _NAME and \
                not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Attribute) and node.attr == _NAME and \
                not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and _NAME in node.names:
            return True
        if isinstance(node, ast.Constant) and node.value == _NAME:
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _CODEGEN:
                source = fold(node.args[0]) if node.args else None
                if not isinstance(source, str) or _NAME in source:
                    return True
            if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and \
                    len(node.args) > 1 and fold(node.args[1]) in (_NAME, None):
                return True
            if isinstance(func, ast.Attribute) and func.attr in _WHOLESALE and \
                    _is_namespace(func.value):
                return True
        if isinstance(node, (ast.BinOp, ast.JoinedStr)) and fold(node) == _NAME:
            return True
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and \
                _is_namespace(node.value) and fold(node.slice) != "__builtins__" and \
                not isinstance(fold(node.slice), str):
            return True     # globals()[<a key built at run time>] = ...
    return False


def _is_namespace(node: ast.AST) -> bool:
    """`globals()`, `vars()`, `locals()`, `vars(x)` or `x.__dict__`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _NAMESPACES:
        return True
    return isinstance(node, ast.Attribute) and node.attr == "__dict__"


class DeadCode:
    """Which branch of an `if`/`while` can never run when the file is graded."""

    def __init__(self, tree: ast.AST, fold: Folder, budget: Budget):
        self._tree, self._fold, self._budget = tree, fold, budget
        self._holds: bool | None = None

    @property
    def main_guard_holds(self) -> bool:
        """Whether a `__main__` block is dead code here (looked at once, when one is met)."""
        if self._holds is None:
            self._holds = not can_change_own_name(self._tree, self._fold, self._budget)
        return self._holds

    def dead_field(self, node: ast.AST) -> str | None:
        """"body" or "orelse" for the branch of `node` that never runs, else None."""
        if not isinstance(node, (ast.If, ast.While)):
            return None
        if _is_false_constant(node.test):
            return "body"
        main = _main_comparison(node.test) if isinstance(node, ast.If) else None
        if main is not None and self.main_guard_holds:
            return "body" if main else "orelse"
        return None
