"""Name resolution: the abstract values an expression can have (a library path, a student's
function or class, an instance, a constant, a file descriptor, unknown), through imports,
aliases, `getattr` with constant names, `importlib`, `__import__`, `vars`/`__dict__` and
`sys.modules[...]`. Memoised per node and per (scope, name), so each is evaluated once."""
from __future__ import annotations

import ast
from typing import Iterable

from .dead_code import DeadCode
from .folding import Folder
from .budget import Budget
from .model import BUILTIN_NAMES, Collector, Scope, declarations
from .vocabulary import DYNAMIC_IMPORTS, FD_SOURCES, MAX_DEPTH, MAX_VALUES

UNKNOWN = ("unknown",)


class Analysis:
    """The scopes of one module and the memoised values of its names and expressions."""

    def __init__(self, tree: ast.Module, budget: Budget | None = None):
        self.budget = budget if budget is not None else Budget()
        self.fold = Folder(self.budget)
        c = Collector(declarations(tree, self.budget), self.budget, self.fold,
                      DeadCode(tree, self.fold, self.budget))
        self.module = c.new_scope("module", tree, None)
        for stmt in tree.body:
            c.link(tree, stmt)
            c.visit(self.module, stmt, top=True)
        for s in c.scopes:
            for name, values in s.late.items():
                s.bindings.setdefault(name, []).extend(values)
        self.scopes = c.scopes
        self.parents = c.parents
        self._by_node = {id(s.node): s.index for s in c.scopes}
        self._expr_memo: dict[int, frozenset] = {}
        self._name_memo: dict[tuple[int, str], frozenset] = {}
        self._busy: set = set()
        # Graded function -> the contract's parameter names (the grader passes only those).
        self.contracts: dict[str, list[str]] = {}
        self.graded: set[str] = set()
        self._uses: dict[str, list[tuple[ast.Name, Scope]]] | None = None
        self._sites: dict[tuple[str, int], list | None] = {}

    # -- values
    def lookup(self, scope: Scope, name: str) -> list[tuple] | None:
        s = scope
        if name in s.globals:
            s = self.module
        first = True
        while s is not None:
            if s.kind != "class" or first:
                if name in s.bindings and name not in s.nonlocals:
                    return s.bindings[name]
            first = False
            if s.parent is None:
                break
            s = s.parent
        if name in BUILTIN_NAMES or name == "__builtins__":
            return [("lib", "builtins" if name == "__builtins__" else f"builtins.{name}")]
        if self.module.star:
            return [("lib", f"{m}.{name}") for m in self.module.star]
        return None

    def name_values(self, scope: Scope, name: str, depth: int) -> frozenset:
        key = (scope.index, name)
        if key in self._name_memo:
            return self._name_memo[key]
        if key in self._busy or depth > MAX_DEPTH:
            return frozenset([UNKNOWN])
        self._busy.add(key)
        out: set = set()
        for b in self.lookup(scope, name) or [UNKNOWN]:
            kind = b[0]
            if kind == "lib":
                out.add(("lib", b[1]))
            elif kind == "user":
                out.add(("user", b[1]))
            elif kind == "instance":
                out.add(("instance", b[1]))
            elif kind == "expr":
                out |= self.value(b[1], self.scopes[b[2]], depth + 1)
            elif kind == "elem":
                out |= {v for v in self.value(b[1], self.scopes[b[2]], depth + 1)
                        if v[0] != "container"}
            elif kind == "param":
                known = self._param_values(self.scopes[b[3]], b[4], b[1], self.scopes[b[2]],
                                           depth + 1)
                if known is None:
                    out.add(UNKNOWN)
                    if b[1] is not None:
                        out |= self.value(b[1], self.scopes[b[2]], depth + 1)
                else:
                    out |= known
            else:
                out.add(UNKNOWN)
        self._busy.discard(key)
        result = self._cap(out)
        self._name_memo[key] = result
        return result

    def _param_values(self, fn: Scope, name: str, default: ast.AST | None, outer: Scope,
                      depth: int) -> set | None:
        """Every value a parameter of a module-level function can have, when all its callers
        are known: the calls in this module (code that runs when graded) and, for a graded
        function, the grader, which passes only the contract's parameters (a parameter of the
        student's own, `activation="relu"`, keeps its default). None when a caller is unknown
        (the function is passed around, decorated, called with `*args`...)."""
        node = fn.node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                node.decorator_list or fn.parent is not self.module:
            return None
        args = node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        if name not in positional and name not in [a.arg for a in args.kwonlyargs]:
            return None                 # *args, **kwargs
        contract = self.contracts.get(node.name)
        if contract is None and node.name in self.graded:
            return None                 # called by the grader, with parameters not known here
        if contract is not None:
            index = positional.index(name) if name in positional else len(contract)
            if name in contract or index < len(contract):
                return None             # the grader passes it
        sites = self._call_sites(node.name, fn.index)
        if sites is None:
            return None
        out: set = set()
        for call, scope in sites:
            self.budget.step()
            if any(isinstance(a, ast.Starred) for a in call.args) or \
                    any(k.arg is None for k in call.keywords):
                return None
            passed = None
            if name in positional and positional.index(name) < len(call.args):
                passed = call.args[positional.index(name)]
            for k in call.keywords:
                if k.arg == name:
                    passed = k.value
            if passed is None:
                if default is None:
                    return None
                continue
            out |= self.value(passed, scope, depth)
        if default is not None:
            out |= self.value(default, outer, depth)
        return out or None

    def _call_sites(self, name: str, index: int) -> list[tuple[ast.Call, Scope]] | None:
        """The calls `name(...)` that reach the function of scope `index`, or None when the
        function is also used otherwise (passed as a value, stored, returned)."""
        if (name, index) in self._sites:
            return self._sites[(name, index)]
        self._sites[(name, index)] = None      # while being computed (and if it escapes)
        if self._uses is None:
            self._uses = {}
            for s in self.scopes:
                for n in s.nodes:
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        self._uses.setdefault(n.id, []).append((n, s))
        sites = []
        for n, s in self._uses.get(name, []):
            self.budget.step()
            if ("user", index) not in (self.lookup(s, name) or []):
                continue
            parent = self.parents.get(id(n))
            if not (isinstance(parent, ast.Call) and parent.func is n):
                return None
            sites.append((parent, s))
        self._sites[(name, index)] = sites
        return sites

    @staticmethod
    def _cap(values: set) -> frozenset:
        return frozenset(values) if len(values) <= MAX_VALUES else \
            frozenset(list(values)[:MAX_VALUES] + [UNKNOWN])

    def value(self, node: ast.AST, scope: Scope, depth: int = 0) -> frozenset:
        key = id(node)
        if key in self._expr_memo:
            return self._expr_memo[key]
        if depth > MAX_DEPTH:
            return frozenset([UNKNOWN])
        result = self._cap(self._value(node, scope, depth))
        self._expr_memo[key] = result
        return result

    def _attribute(self, base: Iterable[tuple], attr: str) -> set:
        out = set()
        for v in base:
            if v[0] == "lib":
                out.add(("lib", f"{v[1]}.{attr}"))
            elif v[0] in ("user", "instance"):
                out.add(("user", v[1]))
            elif v[0] == "dict" and attr == "get":
                out.add(("dictget", v[1]))
            else:
                out.add(("attr", attr))
        return out

    def _value(self, node: ast.AST, scope: Scope, depth: int) -> set:
        d = depth + 1
        if isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call, ast.Subscript)):
            folded = self.fold(node)
            if isinstance(folded, str):
                return {("const", folded)}
        if isinstance(node, ast.Name):
            return set(self.name_values(scope, node.id, d))
        if isinstance(node, ast.Attribute):
            base = self.value(node.value, scope, d)
            if node.attr == "__dict__":
                return {("dict", v[1]) if v[0] == "lib" else UNKNOWN for v in base}
            return self._attribute(base, node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, scope, d)
        if isinstance(node, ast.Subscript):
            base = self.value(node.value, scope, d)
            key = self.fold(node.slice)
            out = set()
            for v in base:
                if v[0] == "dict" and isinstance(key, str):
                    out.add(("lib", key if v[1] == "sys.modules" else f"{v[1]}.{key}"))
                elif v == ("lib", "sys.modules") and isinstance(key, str):
                    out.add(("lib", key))
                elif v[0] == "lib":
                    out.add(("libcall", v[1]))
                elif v[0] != "container":
                    out.add(v)
            return out
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            out = {("container",)}
            for e in node.elts:
                out |= self.value(e, scope, d)
            return out
        if isinstance(node, ast.Dict):
            out = {("container",)}
            for e in node.values:
                out |= self.value(e, scope, d)
            return out
        if isinstance(node, ast.IfExp):
            return set(self.value(node.body, scope, d) | self.value(node.orelse, scope, d))
        if isinstance(node, ast.BoolOp):
            out = set()
            for e in node.values:
                out |= self.value(e, scope, d)
            return out
        if isinstance(node, (ast.NamedExpr, ast.Starred, ast.Await)):
            return set(self.value(node.value, scope, d))
        if isinstance(node, ast.Lambda):
            return {("user", self._scope_of_node(node))}
        folded = self.fold(node)
        if folded is not None:
            return {("const", folded)}
        return {UNKNOWN}

    def _names(self, node: ast.AST, scope: Scope, d: int) -> list[str] | None:
        """The constant strings an expression can be (a literal, or names bound to them)."""
        folded = self.fold(node)
        if isinstance(folded, str):
            return [folded]
        values = self.value(node, scope, d)
        if values and all(v[0] == "const" and isinstance(v[1], str) for v in values):
            return [v[1] for v in values]
        return None

    def _scope_of_node(self, node: ast.AST) -> int:
        return self._by_node.get(id(node), 0)

    def _call(self, node: ast.Call, scope: Scope, d: int) -> set:
        funcs = self.value(node.func, scope, d)
        out: set = set()
        args = node.args
        for f in funcs:
            kind = f[0]
            if kind == "lib":
                path = f[1]
                if path == "builtins.getattr" and len(args) >= 2:
                    base = self.value(args[0], scope, d)
                    names = self._names(args[1], scope, d)
                    if names is not None:
                        for name in names:
                            out |= self._attribute(base, name)
                    else:
                        out |= {("dyn", v[1]) if v[0] == "lib" else UNKNOWN for v in base}
                elif path in DYNAMIC_IMPORTS and args:
                    name = self.fold(args[0])
                    if isinstance(name, str):
                        full = path == "importlib.import_module" or any(
                            k.arg == "fromlist" for k in node.keywords) or len(args) >= 4
                        out.add(("lib", name if full else name.split(".")[0]))
                    else:
                        out.add(UNKNOWN)
                elif path == "builtins.vars" and args:
                    out |= {("dict", v[1]) if v[0] == "lib" else UNKNOWN
                            for v in self.value(args[0], scope, d)}
                elif path in ("functools.partial", "functools.wraps", "builtins.staticmethod",
                              "builtins.classmethod", "torch.jit.script", "torch.compile",
                              "torch.vmap", "torch.func.vmap") and args:
                    out |= self.value(args[0], scope, d)
                elif path in ("operator.attrgetter", "operator.methodcaller") and args:
                    name = self.fold(args[0])
                    out.add(("attr", name) if isinstance(name, str) else UNKNOWN)
                elif path in FD_SOURCES or path.endswith(".fileno"):
                    out.add(("fd",))
                else:
                    out.add(("libcall", path))
            elif kind == "dictget" and args:
                name = self.fold(args[0])
                if isinstance(name, str):
                    out.add(("lib", name if f[1] == "sys.modules" else f"{f[1]}.{name}"))
            elif kind == "user" and self.scopes[f[1]].kind == "class":
                out.add(("instance", f[1]))
            elif kind == "attr" and f[1] == "fileno":
                out.add(("fd",))
            elif kind == "attr" and f[1] in ("items", "values", "keys", "get", "copy"):
                out.add(UNKNOWN)
            else:
                out.add(UNKNOWN)
        # sys.modules.get("x") and sys.modules.__getitem__("x")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "__getitem__") \
                and args:
            base = self.value(node.func.value, scope, d)
            name = self.fold(args[0])
            if ("lib", "sys.modules") in base and isinstance(name, str):
                out.add(("lib", name))
        return out
