"""Constant folding of the small expressions students (or cheaters) build names with:
`"soft" + "max"`, f-strings, `"".join([...])`, `chr(...)`, slices and string methods.

Folding runs in the trusted process on hostile source, so its cost is bounded before any work
is done, never after: each operation's result size is computed from its operands first, and an
operation whose result would be longer than `MAX_FOLDED_CHARS` is not folded (its value is
unknown, which the scan treats as a doubt, never as a verdict). `"%0200000000d" % k` therefore
costs a regular expression over its format string, not a 200 MB string. Every fold is a step of
the scan's budget and every character it produces is counted there (`Budget.folded`), and each
node is folded once (memoised by node), so the total work is linear in the source.
"""
from __future__ import annotations

import ast
import re

from .budget import Budget

# Longer than any name or snippet worth resolving; an honest file's folded strings are names.
MAX_FOLDED_CHARS = 10_000
MAX_FOLD_DEPTH = 30          # nesting of one folded expression (deeper: unknown)
# `%` conversions: flags, then a width and a precision that must be literal numbers.
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?(.)", re.S)
_CASE_METHODS = ("lower", "upper", "strip", "lstrip", "rstrip", "title", "casefold",
                 "removeprefix", "removesuffix")


def percent_bound(fmt: str, arg: object) -> int | None:
    """An upper bound on the length of `fmt % arg` (one argument), or None when a width or
    precision is `*` or too large to fold."""
    total = len(fmt)
    shown = len(arg) if isinstance(arg, str) else len(str(arg)) + 1
    for m in _PERCENT_SPEC.finditer(fmt):
        width, precision = m.group(1), m.group(2) or ""
        if "*" in (width, precision):
            return None
        size = max(int(width or 0), int(precision or 0))
        if size > MAX_FOLDED_CHARS:
            return None
        total += max(size, shown) + 2
    return total


class Folder:
    """Folds constant expressions of one scan, each node once, within the scan's budget."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self._memo: dict[int, object] = {}

    def __call__(self, node: ast.AST, depth: int = 0):
        """The constant a small expression always has (strings built from constants), or
        None. A node first met deep inside a larger expression keeps the (possibly unknown)
        value found there: folding is never redone, whatever the nesting."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if depth > MAX_FOLD_DEPTH:
            return None
        self.budget.step()
        value = self._fold(node, depth)
        # A constant as written costs nothing (the source's size is bounded); a built one is
        # counted as built (it is under the cap by construction: the check after is a guard).
        if isinstance(value, (str, bytes)) and not isinstance(node, ast.Constant):
            self.budget.folded(len(value))
            if len(value) > MAX_FOLDED_CHARS:
                value = None
        self._memo[key] = value
        return value

    def _fold(self, node: ast.AST, depth: int):
        sub = depth + 1
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, int, bytes)) and \
                not isinstance(node.value, bool) else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self(node.operand, sub)
            return -inner if isinstance(inner, int) else None
        if isinstance(node, ast.BinOp):
            return self._binop(node, sub)
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node, sub)
        if isinstance(node, ast.Subscript):
            return self._slice(node, sub)
        if isinstance(node, ast.Call):
            return self._call(node, sub)
        return None

    def _binop(self, node: ast.BinOp, sub: int):
        left, right = self(node.left, sub), self(node.right, sub)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and \
                isinstance(left, (str, bytes)):
            return left + right if len(left) + len(right) <= MAX_FOLDED_CHARS else None
        if isinstance(node.op, ast.Mod) and isinstance(left, str) and \
                isinstance(right, (str, int)):
            bound = percent_bound(left, right)
            if bound is None or bound > MAX_FOLDED_CHARS:
                return None
            try:
                return left % right
            except (TypeError, ValueError, OverflowError):
                return None
        if isinstance(node.op, ast.Mult) and isinstance(left, str) and isinstance(right, int) \
                and 0 <= right <= 64 and len(left) * right <= MAX_FOLDED_CHARS:
            return left * right
        return None

    def _fstring(self, node: ast.JoinedStr, sub: int):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                # A conversion or format spec (`{k:0200000000d}`) is not folded: unknown.
                if v.conversion != -1 or v.format_spec is not None:
                    return None
                inner = self(v.value, sub)
                if not isinstance(inner, (str, int)):
                    return None
                parts.append(str(inner))
            if sum(map(len, parts)) > MAX_FOLDED_CHARS:
                return None
        return "".join(parts)

    def _slice(self, node: ast.Subscript, sub: int):
        base = self(node.value, sub)
        if isinstance(base, str) and isinstance(node.slice, ast.Slice):
            parts = (node.slice.lower, node.slice.upper, node.slice.step)
            bounds = [None if b is None else self(b, sub) for b in parts]
            if all(isinstance(b, int) for b, p in zip(bounds, parts) if p is not None) \
                    and bounds[2] != 0:
                return base[slice(*bounds)]
        return None

    def _call(self, node: ast.Call, sub: int):
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self(func.value, sub)
            if isinstance(base, str) and func.attr == "join" and len(node.args) == 1:
                return self._join(base, node.args[0], sub)
            if not isinstance(base, (str, bytes)):
                return None
            args = [self(a, sub) for a in node.args]
            if isinstance(base, str) and all(isinstance(a, str) for a in args):
                if func.attr == "replace" and len(args) >= 2:
                    old, new = args[0], args[1]
                    count = len(base) + 1 if not old else base.count(old)
                    if len(base) + count * len(new) > MAX_FOLDED_CHARS:
                        return None
                    try:
                        return base.replace(*args)
                    except (TypeError, ValueError):
                        return None
                if func.attr in _CASE_METHODS:
                    try:       # at most a few times the base's length (casefold: "ß" -> "ss")
                        return getattr(base, func.attr)(*args)
                    except (TypeError, ValueError):
                        return None
            if isinstance(base, bytes) and func.attr == "decode" and not node.args:
                try:
                    return base.decode()
                except UnicodeDecodeError:
                    return None
            return None
        if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
            code = self(node.args[0], sub)
            return chr(code) if isinstance(code, int) and 0 <= code < 0x110000 else None
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            inner = self(node.args[0], sub)
            if isinstance(inner, int):
                try:
                    return str(inner)
                except ValueError:      # more digits than int-to-str conversion allows
                    return None
            return inner if isinstance(inner, str) else None
        return None

    def _join(self, sep: str, items: ast.AST, sub: int):
        if isinstance(items, (ast.List, ast.Tuple)):
            parts = []
            size = 0
            for e in items.elts:
                p = self(e, sub)
                if not isinstance(p, str):
                    return None
                size += len(p) + len(sep)
                if size > MAX_FOLDED_CHARS:
                    return None
                parts.append(p)
            return sep.join(parts)
        if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and \
                items.func.id == "reversed" and len(items.args) == 1:
            inner = self(items.args[0], sub)
            if isinstance(inner, str) and len(inner) * (len(sep) + 1) <= MAX_FOLDED_CHARS:
                return sep.join(reversed(inner))
        return None
