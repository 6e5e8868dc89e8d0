"""Plausible mistakes derived from an assignment's hidden reference by rewriting its syntax tree
(for `autograder mutants`): each `Mutant` is the reference module with one small change in one
of its functions, the kind of slip a student makes (operands of a matmul swapped, a scale
dropped or squared, an axis changed, an off-by-one, a sign flipped, a `.detach()` or an
in-place operation inserted, a keyword such as `keepdim=True` dropped, a constant changed...).

Only `ast` reads and rewrites the source; nothing is run here. The operators know no
assignment: they look at the shape of the code (a `@`, a division, a keyword argument, a
subscript with a string key), never at names of the course. Functions of the reference are
mutated, not its module-level values (knowledge-check answers are data, not code).
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from typing import Iterator

# A node's place inside its function: the fields and list indexes that lead to it.
Path = tuple[tuple[str, int | None], ...]
SHOWN = 72      # characters of code shown for a mutant's before and after

_BINOP_NAMES = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
                ast.MatMult: "@", ast.Pow: "**", ast.Mod: "%"}
_OTHER_OP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
             ast.FloorDiv: ast.Div}
_INPLACE = {ast.Add: "__iadd__", ast.Sub: "__isub__", ast.Mult: "__imul__",
            ast.Div: "__itruediv__"}
_OTHER_COMPARE = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
                  ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                  ast.In: ast.NotIn, ast.NotIn: ast.In}
# Fields that hold no computation (type hints).
_SKIPPED_FIELDS = {"annotation", "returns", "type_comment"}


@dataclass(frozen=True)
class Mutant:
    """One change to one function of the reference."""

    id: str                 # "<function>:<line>:<n>", unique in the reference
    function: str           # the top-level function changed
    line: int
    operator: str           # what kind of change, in words ("matmul operands swapped")
    before: str             # the code changed, as written
    after: str              # what it became
    module: ast.Module = field(repr=False, compare=False)
    changed: ast.FunctionDef = field(repr=False, compare=False)

    def describe(self) -> str:
        return f"{self.operator}: `{self.before}` -> `{self.after}`"


def _short(node: ast.AST | list) -> str:
    if isinstance(node, list):
        text = "; ".join(ast.unparse(n) for n in node) or "(nothing)"
    else:
        text = ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + "..."


def _walk(node: ast.AST, path: Path = ()) -> Iterator[tuple[ast.AST, Path]]:
    """Every node under `node` (itself first), with its path; type hints left out."""
    yield node, path
    for name, value in ast.iter_fields(node):
        if name in _SKIPPED_FIELDS:
            continue
        if isinstance(value, ast.AST):
            yield from _walk(value, path + ((name, None),))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from _walk(item, path + ((name, i),))


def _replace(function: ast.FunctionDef, path: Path, new: ast.AST | list) -> ast.FunctionDef:
    """A copy of `function` with the node at `path` replaced by `new` (a list of statements
    replaces one statement)."""
    out = copy.deepcopy(function)
    parent: ast.AST = out
    for name, index in path[:-1]:
        value = getattr(parent, name)
        parent = value if index is None else value[index]
    name, index = path[-1]
    if index is None:
        setattr(parent, name, new)
    elif isinstance(new, list):
        items = getattr(parent, name)
        items[index:index + 1] = new
        if not items and name == "body":
            items.append(ast.Pass())
    else:
        getattr(parent, name)[index] = new
    return ast.fix_missing_locations(out)


def _c(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


def _attribute_call(value: ast.expr, method: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=_c(value), attr=method, ctx=ast.Load()),
                    args=[_c(a) for a in args], keywords=[])


def _number(node: ast.AST) -> int | float | bool | None:
    """The value of a numeric literal (`-1` is a minus applied to 1 in the tree)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) \
            and not isinstance(node.operand.value, bool):
        return -node.operand.value
    return None


def _literal(value: int | float | bool) -> ast.expr:
    if not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(-value))
    return ast.Constant(value)


def _other_numbers(value: int | float | bool) -> list[int | float | bool]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        out = [value + 1, value - 1, -value]
    elif value == 0:
        out = [1.0]
    else:
        out = [0.0, value * 10, -value]
    seen: list = []
    for v in out:
        if v != value and v not in seen:
            seen.append(v)
    return seen


class _Context:
    """What the operators need to know about the function and the module around a node."""

    def __init__(self, function: ast.FunctionDef, module_names: set[str], torch: bool):
        self.function = function
        self.module_names = module_names        # names bound by the module's imports
        self.torch = torch
        args = function.args
        positional = args.posonlyargs + args.args
        # The inputs: parameters without a default (`dim=-1`, `mask=None`, `eps=1e-5` are
        # options).
        self.inputs = {a.arg for a in positional[:len(positional) - len(args.defaults)]}
        self.inputs |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None}
        keys: list[str] = []
        for node in ast.walk(function):
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and isinstance(node.slice.value, str) and node.slice.value not in keys:
                keys.append(node.slice.value)
        self.keys = keys


# Each operator: (node, its path, the context) -> [(operator words, replacement)].
Change = tuple[str, "ast.AST | list"]


def _binop(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if not isinstance(node, ast.BinOp):
        return []
    op = type(node.op)
    left, right = node.left, node.right
    out: list[Change] = []
    if op is ast.MatMult:
        out.append(("matmul operands swapped", ast.BinOp(_c(right), ast.MatMult(), _c(left))))
        out.append(("matmul's left operand transposed",
                    ast.BinOp(ast.Attribute(_c(left), "mT", ast.Load()), ast.MatMult(),
                              _c(right))))
        out.append(("matmul's right operand transposed",
                    ast.BinOp(_c(left), ast.MatMult(),
                              ast.Attribute(_c(right), "mT", ast.Load()))))
        return out
    if op in (ast.Sub, ast.Div):
        out.append((f"operands of `{_BINOP_NAMES[op]}` swapped", ast.BinOp(_c(right), op(),
                                                                          _c(left))))
    if op in (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow, ast.Mod):
        what = {ast.Add: "a term dropped", ast.Sub: "the subtracted term dropped",
                ast.Mult: "a factor dropped", ast.Div: "the divisor dropped (a scale left out)",
                ast.FloorDiv: "the divisor dropped", ast.Pow: "the power dropped",
                ast.Mod: "the modulo dropped"}[op]
        out.append((what, _c(left)))
        if op in (ast.Add, ast.Mult):
            out.append((what, _c(right)))
    if op in _OTHER_OP:
        out.append((f"`{_BINOP_NAMES[op]}` replaced by `{_BINOP_NAMES[_OTHER_OP[op]]}`",
                    ast.BinOp(_c(left), _OTHER_OP[op](), _c(right))))
    if op is ast.Div and _number(right) is None:
        out.append(("the divisor squared (a scale applied twice)",
                    ast.BinOp(_c(left), ast.Div(), ast.BinOp(_c(right), ast.Mult(), _c(right)))))
    if op in _INPLACE and isinstance(left, ast.Name) and left.id in ctx.inputs:
        out.append(("an input changed in place", _attribute_call(left, _INPLACE[op], right)))
    return out


def _unary(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)) \
            and _number(node) is None:
        return [("a sign flipped" if isinstance(node.op, ast.USub) else "a `not` dropped",
                 _c(node.operand))]
    return []


def _constant(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    value = _number(node)
    if value is None or (isinstance(node, ast.Constant) and path
                         and path[-1][0] == "operand"):
        return []   # the 1 of `-1` is changed as `-1`
    what = "a flag flipped" if isinstance(value, bool) else "a constant changed"
    return [(what, _literal(v)) for v in _other_numbers(value)]


def _string(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return []
    try:
        number = float(node.value)
    except ValueError:
        number = None
    if number is not None and number != 0:
        flipped = node.value[1:] if node.value.startswith("-") else "-" + node.value
        return [("a sign flipped", ast.Constant(flipped))]
    if path and path[-1][0] == "slice" and len(ctx.keys) > 1 and node.value in ctx.keys:
        # Another entry of the same container family: the neighbours in order of use.
        i = ctx.keys.index(node.value)
        others = {ctx.keys[(i - 1) % len(ctx.keys)], ctx.keys[(i + 1) % len(ctx.keys)]}
        return [("another key read", ast.Constant(k)) for k in sorted(others)
                if k != node.value]
    return []


def _compare(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 \
            and type(node.ops[0]) in _OTHER_COMPARE:
        new = _c(node)
        new.ops = [_OTHER_COMPARE[type(node.ops[0])]()]
        return [("a comparison negated or shifted", new)]
    return []


def _conditional(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if isinstance(node, ast.IfExp):
        return [("a condition taken as always true", _c(node.body)),
                ("a condition taken as always false", _c(node.orelse))]
    if isinstance(node, ast.If):
        return [("a condition taken as always true", [_c(s) for s in node.body]),
                ("a condition taken as always false", [_c(s) for s in node.orelse])]
    return []


def _is_module(node: ast.expr, ctx: _Context) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ctx.module_names


def _call(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if not isinstance(node, ast.Call):
        return []
    out: list[Change] = []
    for i, kw in enumerate(node.keywords):
        if kw.arg is not None:
            new = _c(node)
            del new.keywords[i]
            out.append((f"the keyword `{kw.arg}=` dropped", new))
    args = node.args
    for i in range(len(args) - 1):
        pair = args[i:i + 2]
        literals = sum(_number(a) is not None for a in pair)
        # A literal swapped with an array argument only breaks the call.
        if not any(isinstance(a, ast.Starred) for a in pair) and literals != 1 \
                and ast.dump(args[i]) != ast.dump(args[i + 1]):
            new = _c(node)
            new.args[i], new.args[i + 1] = new.args[i + 1], new.args[i]
            out.append(("two arguments swapped", new))
    func = node.func
    if isinstance(func, ast.Attribute) and not _is_module(func.value, ctx):
        out.append((f"the call `.{func.attr}(...)` dropped", _c(func.value)))
    elif args and not isinstance(args[0], (ast.Starred, ast.Constant)):
        out.append(("a call dropped (its first argument kept)", _c(args[0])))
    if isinstance(func, ast.Name) and func.id == "range" and args:
        for delta, op in ((1, ast.Add()), (-1, ast.Sub())):
            new = _c(node)
            new.args[-1] = ast.BinOp(_c(args[-1]), op, ast.Constant(1))
            out.append((f"a range off by one ({delta:+d})", new))
    return out


def _bound(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    """Off by one: a slice's bounds, and an index that is a name or an expression."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Slice):
        targets = [b for b in (node.lower, node.upper) if b is not None and _number(b) is None]
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Name, ast.BinOp)) \
            and isinstance(node.ctx, ast.Load):
        targets = [node.slice]
    if not targets:
        return []
    out: list[Change] = []
    for target in targets:
        for op, sign in ((ast.Add(), "+1"), (ast.Sub(), "-1")):
            new = _c(node)
            replaced = ast.BinOp(_c(target), op, ast.Constant(1))
            if isinstance(node, ast.Slice):
                setattr(new, "lower" if target is node.lower else "upper", replaced)
            else:
                new.slice = replaced
            out.append((f"an index or bound off by one ({sign})", new))
    return out


def _returned(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    if not (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
            and len(node.value.elts) > 1):
        return []
    elts = node.value.elts
    out: list[Change] = []
    for i in range(len(elts) - 1):
        new = _c(node)
        new.value.elts[i], new.value.elts[i + 1] = new.value.elts[i + 1], new.value.elts[i]
        out.append(("returned values swapped", new))
    for e in elts:
        out.append(("only one of the returned values returned", ast.Return(_c(e))))
    return out


def _statement(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    """A step left out: a name rebound, or an augmented assignment."""
    if isinstance(node, ast.AugAssign):
        return [("a step left out", [])]
    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id in {
                n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}:
        return [("a step left out", [])]
    return []


def _detach(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    """torch only: an assigned or returned value cut from the autograd graph."""
    if not ctx.torch:
        return []
    values: list[tuple[str, ast.expr]] = []
    if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.BinOp)):
        values = [("value", node.value)]
    elif isinstance(node, ast.Return) and node.value is not None:
        if isinstance(node.value, ast.Tuple):
            values = [(f"elt{i}", e) for i, e in enumerate(node.value.elts)]
        else:
            values = [("value", node.value)]
    out: list[Change] = []
    for where, value in values:
        new = _c(node)
        detached = _attribute_call(value, "detach")
        if where == "value":
            new.value = detached
        else:
            new.value.elts[int(where[3:])] = detached
        out.append(("`.detach()` inserted", new))
    return out


def _scale_later(node: ast.AST, path: Path, ctx: _Context) -> list[Change]:
    """A scale applied one step too late: `t = a / s` becomes `t = a`, and the next
    assignment in the same block that reads `t` divides its own value by `s` instead."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, (ast.Div, ast.Mult))
            and _number(node.value.right) is None and path and path[-1][1] is not None):
        return []
    name = node.targets[0].id
    return [("a scale applied one step later", ("later", name))]


_OPERATORS = (_binop, _unary, _constant, _string, _compare, _conditional, _call, _bound,
              _returned, _statement, _detach, _scale_later)


def _apply_later(function: ast.FunctionDef, path: Path, name: str) -> ast.FunctionDef | None:
    """The `_scale_later` rewrite, or None when no later assignment reads `name`."""
    out = copy.deepcopy(function)
    parent: ast.AST = out
    for field_name, index in path[:-1]:
        value = getattr(parent, field_name)
        parent = value if index is None else value[index]
    block_name, index = path[-1]
    block = getattr(parent, block_name)
    assign = block[index]
    scale = assign.value.right
    op = type(assign.value.op)
    for later in block[index + 1:]:
        if isinstance(later, ast.Assign) and len(later.targets) == 1 \
                and isinstance(later.targets[0], ast.Name) and later.targets[0].id != name \
                and any(isinstance(n, ast.Name) and n.id == name
                        for n in ast.walk(later.value)):
            later.value = ast.BinOp(later.value, op(), copy.deepcopy(scale))
            assign.value = assign.value.left
            return ast.fix_missing_locations(out)
    return None


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def uses_torch(tree: ast.Module) -> bool:
    """Whether the reference imports torch (its values may carry gradients)."""
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch"
                                                for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            return True
    return False


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def derive_mutants(source: str, functions: set[str] | None = None) -> list[Mutant]:
    """Every mutant of the source's top-level functions (`functions`: only these), in the
    order of the source, without two that change a function into the same code."""
    tree = ast.parse(source)
    module_names = _module_names(tree)
    torch = uses_torch(tree)
    out: list[Mutant] = []
    for position, top in enumerate(tree.body):
        if not isinstance(top, ast.FunctionDef) or (functions is not None
                                                    and top.name not in functions):
            continue
        ctx = _Context(top, module_names, torch)
        seen = {ast.dump(top)}
        count = 0
        for node, path in _walk(top):
            if not path or _is_docstring(node):
                continue
            for operator in _OPERATORS:
                for words, new in operator(node, path, ctx):
                    if isinstance(new, tuple) and new[0] == "later":
                        changed = _apply_later(top, path, new[1])
                        if changed is None:
                            continue
                        after = f"{_short(node.value.left)} ... / {_short(node.value.right)}"
                    else:
                        if isinstance(new, ast.AST):
                            ast.copy_location(new, node)
                        changed = _replace(top, path, new)
                        after = _short(new)
                    key = ast.dump(changed)
                    if key in seen:
                        continue
                    seen.add(key)
                    count += 1
                    body = list(tree.body)
                    body[position] = changed
                    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
                    line = getattr(node, "lineno", top.lineno)
                    out.append(Mutant(f"{top.name}:{line}:{count}", top.name, line, words,
                                      _short(node), after, module, changed))
    return out
