"""Constant folding of the small expressions students (or cheaters) build names with:
`"soft" + "max"`, f-strings, `"".join([...])`, `chr(...)`, slices and string methods."""
from __future__ import annotations

import ast

def fold(node: ast.AST, depth: int = 0):
    """The constant a small expression always has (strings built from constants), or None."""
    if depth > 30:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (str, int, bytes)) and \
            not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = fold(node.operand, depth + 1)
        return -inner if isinstance(inner, int) else None
    if isinstance(node, ast.BinOp):
        left, right = fold(node.left, depth + 1), fold(node.right, depth + 1)
        if isinstance(node.op, ast.Add) and type(left) is type(right) and \
                isinstance(left, (str, bytes)):
            return left + right if len(left) + len(right) < 10_000 else None
        if isinstance(node.op, ast.Mod) and isinstance(left, str) and \
                isinstance(right, (str, int)):
            try:
                return left % right
            except (TypeError, ValueError):
                return None
        if isinstance(node.op, ast.Mult) and isinstance(left, str) and isinstance(right, int) \
                and 0 <= right <= 64 and len(left) * right < 10_000:
            return left * right
        return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                inner = fold(v.value, depth + 1)
                parts.append(str(inner) if isinstance(inner, (str, int)) else "*")
        return "".join(parts)
    if isinstance(node, ast.Subscript):
        base = fold(node.value, depth + 1)
        if isinstance(base, str) and isinstance(node.slice, ast.Slice):
            parts = (node.slice.lower, node.slice.upper, node.slice.step)
            bounds = [None if b is None else fold(b, depth + 1) for b in parts]
            if all(isinstance(b, int) for b, p in zip(bounds, parts) if p is not None) \
                    and bounds[2] != 0:
                return base[slice(*bounds)]
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            base = fold(func.value, depth + 1)
            args = [fold(a, depth + 1) for a in node.args]
            if isinstance(base, str) and func.attr == "join" and len(node.args) == 1:
                items = node.args[0]
                if isinstance(items, (ast.List, ast.Tuple)):
                    parts = [fold(e, depth + 1) for e in items.elts]
                    if all(isinstance(p, str) for p in parts):
                        return base.join(parts)
                if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and \
                        items.func.id == "reversed" and len(items.args) == 1:
                    inner = fold(items.args[0], depth + 1)
                    return base.join(reversed(inner)) if isinstance(inner, str) else None
                return None
            if isinstance(base, str) and all(isinstance(a, str) for a in args) and \
                    func.attr in ("lower", "upper", "strip", "lstrip", "rstrip", "replace",
                                  "removeprefix", "removesuffix", "title", "casefold"):
                try:
                    return getattr(base, func.attr)(*args)
                except (TypeError, ValueError):
                    return None
            if isinstance(base, bytes) and func.attr == "decode":
                try:
                    return base.decode()
                except UnicodeDecodeError:
                    return None
        if isinstance(func, ast.Name) and func.id == "chr" and len(node.args) == 1:
            code = fold(node.args[0], depth + 1)
            return chr(code) if isinstance(code, int) and 0 <= code < 0x110000 else None
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            inner = fold(node.args[0], depth + 1)
            return str(inner) if isinstance(inner, (str, int)) else None
    return None
