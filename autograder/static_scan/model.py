"""The source model: the scopes of one module (module, functions, classes, lambdas), the names
each binds and to what (imports, assignments, parameters, loop targets), and the nodes each scope
executes. Name resolution and the call graph are built on it (`values`)."""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

from .budget import Budget
from .dead_code import DeadCode
from .folding import Folder
from .vocabulary import Finding

@dataclass(eq=False)
class Scope:
    kind: str                       # module, function, class
    node: ast.AST
    parent: "Scope | None"
    index: int
    bindings: dict[str, list[tuple]] = field(default_factory=dict)
    late: dict[str, list[tuple]] = field(default_factory=dict)   # set by inner `global`s
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    star: list[str] = field(default_factory=list)
    nodes: list[ast.AST] = field(default_factory=list)
    edges: set[int] = field(default_factory=set)
    refs: list[tuple] = field(default_factory=list)   # (rule, line, node, target), lazily shown
    tamper: list[Finding] = field(default_factory=list)
    self_of: "Scope | None" = None  # a method's class: its first parameter is an instance


BUILTIN_NAMES = set(dir(builtins))


class Collector:
    """Builds the scopes of one module: bindings and the nodes each scope executes."""

    def __init__(self, decls: dict[int, tuple[set[str], set[str]]], budget: Budget,
                 fold: Folder, dead: DeadCode | None = None):
        self.scopes: list[Scope] = []
        self.parents: dict[int, ast.AST] = {}
        self.decls = decls
        self.budget = budget
        self.fold = fold
        self.dead = dead

    def new_scope(self, kind: str, node: ast.AST, parent: Scope | None) -> Scope:
        s = Scope(kind, node, parent, len(self.scopes))
        self.scopes.append(s)
        return s

    def bind(self, scope: Scope, name: str, value: tuple, unconditional: bool = False) -> None:
        target = scope
        if name in scope.globals:
            target = self.scopes[0]
            target.late.setdefault(name, []).append(value)
            return
        if unconditional and scope.kind == "module":
            scope.bindings[name] = [value]
        else:
            target.bindings.setdefault(name, []).append(value)

    def bind_target(self, scope: Scope, target: ast.AST, value: tuple, top: bool) -> None:
        if isinstance(target, ast.Name):
            self.bind(scope, target.id, value, top)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.bind_target(scope, t, value, False)
        elif isinstance(target, ast.Starred):
            self.bind_target(scope, target.value, value, False)
        elif isinstance(target, ast.Subscript) and is_globals_call(target.value):
            key = self.fold(target.slice)
            if isinstance(key, str):
                self.bind(self.scopes[0], key, value)

    def link(self, parent: ast.AST, child: ast.AST) -> None:
        self.parents[id(child)] = parent

    def visit(self, scope: Scope, node: ast.AST, top: bool = False) -> None:
        """Record `node` (executed in `scope`) and what it binds; recurse."""
        stack = [(scope, node, top)]
        while stack:
            scope, node, top = stack.pop()
            self.budget.node()
            scope.nodes.append(node)
            kind = type(node)
            if kind in _PLAIN:      # most nodes: nothing bound, nothing opened
                parents = self.parents
                children = list(ast.iter_child_nodes(node))
                if (kind is ast.If or kind is ast.While) and self.dead is not None:
                    dead = self.dead.dead_field(node)
                    if dead:        # never runs when graded: neither recorded nor bound
                        never = {id(s) for s in getattr(node, dead)}
                        children = [c for c in children if id(c) not in never]
                for child in children:
                    parents[id(child)] = node
                stack.extend((scope, c, False) for c in reversed(children))
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = self.new_scope("function", node, scope)
                args = node.args
                params = args.posonlyargs + args.args
                if scope.kind == "class" and params and not isinstance(node, ast.Lambda) and \
                        not any(_decorator_name(d) == "staticmethod"
                                for d in node.decorator_list):
                    inner.self_of = scope
                outside = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
                if not isinstance(node, ast.Lambda):
                    outside += list(node.decorator_list)
                for child in outside:
                    self.link(node, child)
                    stack.append((scope, child, False))
                all_params = params + args.kwonlyargs + [a for a in (args.vararg, args.kwarg)
                                                         if a is not None]
                defaults = dict(zip([a.arg for a in params[len(params) - len(args.defaults):]],
                                    args.defaults))
                for a, d in zip(args.kwonlyargs, args.kw_defaults):
                    if d is not None:
                        defaults[a.arg] = d
                for i, a in enumerate(all_params):
                    if i == 0 and inner.self_of is not None:
                        inner.bindings[a.arg] = [("instance", inner.self_of.index)]
                    else:
                        d = defaults.get(a.arg)
                        inner.bindings[a.arg] = [("param", d, scope.index, inner.index, a.arg)]
                if isinstance(node, ast.Lambda):
                    self.link(node, node.body)
                    stack.append((inner, node.body, False))
                else:
                    self.bind(scope, node.name, ("user", inner.index), top)
                    declared_global, declared_nonlocal = self.decls.get(id(node), ((), ()))
                    inner.globals.update(declared_global)
                    inner.nonlocals.update(declared_nonlocal)
                    for stmt in node.body:
                        self.link(node, stmt)
                    stack.extend((inner, s, False) for s in reversed(node.body))
                continue
            if isinstance(node, ast.ClassDef):
                inner = self.new_scope("class", node, scope)
                for child in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                    self.link(node, child)
                    stack.append((scope, child, False))
                self.bind(scope, node.name, ("user", inner.index), top)
                for stmt in node.body:
                    self.link(node, stmt)
                stack.extend((inner, s, True) for s in reversed(node.body))
                continue
            self._bindings_of(scope, node, top)
            children = list(ast.iter_child_nodes(node))
            parents = self.parents
            for child in children:
                parents[id(child)] = node
            # only a module's own statements bind unconditionally (`top`)
            stack.extend((scope, c, False) for c in reversed(children))

    def _bindings_of(self, scope: Scope, node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.bind(scope, alias.asname, ("lib", alias.name), top)
                else:
                    root = alias.name.split(".")[0]
                    self.bind(scope, root, ("lib", root), top)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                return
            for alias in node.names:
                if alias.name == "*":
                    scope.star.append(node.module or "")
                else:
                    self.bind(scope, alias.asname or alias.name,
                              ("lib", f"{node.module}.{alias.name}"), top)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                self.bind_target(scope, t, ("expr", node.value, scope.index), top)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            self.bind_target(scope, node.target, ("expr", node.value, scope.index), top)
        elif isinstance(node, ast.NamedExpr):
            self.bind_target(scope, node.target, ("expr", node.value, scope.index), False)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self.bind_target(scope, node.target, ("elem", node.iter, scope.index), False)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    self.bind_target(scope, item.optional_vars,
                                     ("expr", item.context_expr, scope.index), False)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bind(scope, node.name, ("unknown",))
        elif isinstance(node, ast.Global):
            scope.globals.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            scope.nonlocals.update(node.names)


def declarations(tree: ast.AST, budget: Budget) -> dict[int, tuple[set[str], set[str]]]:
    """For each function (by node id): the names declared `global` and `nonlocal` anywhere in
    its body, nested scopes included. One pass over the statements (walking each function's
    body apart would cost the nesting depth times the size; declarations are statements, so
    expressions are not entered)."""
    out: dict[int, tuple[set[str], set[str]]] = {}
    # Each entry carries its enclosing functions as a linked list: (node id, outer link).
    stack: list[tuple[ast.AST, tuple | None]] = [(tree, None)]
    while stack:
        node, chain = stack.pop()
        budget.step()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            which = 0 if isinstance(node, ast.Global) else 1
            link = chain
            while link is not None:
                out[link[0]][which].update(node.names)
                link = link[1]
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[id(node)] = (set(), set())
            chain = (id(node), chain)
        for name in _STATEMENT_LISTS:
            items = getattr(node, name, None)
            if isinstance(items, list):
                stack.extend((child, chain) for child in items)
    return out


# The fields that hold statements (of compound statements, handlers and match cases).
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


# Node types that bind no name and open no scope.
_PLAIN = {ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare,
          ast.Subscript, ast.Expr, ast.Return, ast.Load, ast.Store, ast.Del, ast.keyword,
          ast.Tuple, ast.List, ast.Dict, ast.BoolOp, ast.IfExp, ast.If, ast.While, ast.Slice,
          ast.JoinedStr, ast.FormattedValue, ast.Pass, ast.Break, ast.Continue, ast.Raise,
          ast.Assert, ast.Starred, ast.Set, ast.Try, ast.Delete}
_PLAIN |= {t for t in vars(ast).values() if isinstance(t, type) and
           issubclass(t, (ast.operator, ast.cmpop, ast.unaryop, ast.boolop))}


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def is_globals_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("globals", "vars", "locals") and not node.args
