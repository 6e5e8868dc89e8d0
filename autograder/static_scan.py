"""A static scan of a submission's source, in the trusted process: library shortcuts and
tampering with the grader, found without importing or running anything of the student's.

Checks computed in the worker (forbidden calls, gradients, mutated inputs) can be forged by a
submission that patches the engine's modules there, so this scan is the trusted half:

* **Library shortcuts.** Every reference to a library object is resolved through imports,
  aliases, assignments, `getattr` with constant (or constant-built) names, `importlib`,
  `__import__`, `vars(...)` / `__dict__` and `sys.modules[...]`. A question's forbidden entry
  (`torch.nn.functional.softmax`) is matched by any library path naming the same routine
  (`torch.ops.aten._softmax`, `torch._C._nn.softmax`, `log_softmax`, `nn.Softmax`), by a method
  of an unknown object (`x.softmax(...)`) when the entry is a `torch.Tensor` method, by torch's
  decomposition modules, by code that switches off torch-function modes, and by a library
  attribute looked up under a name built at run time. A reference counts for a graded function
  when the function reaches it through the module's call graph (helpers, classes such as a
  custom `autograd.Function`, lambdas, default arguments, module-level aliases).
* **Tampering.** Source that touches the engine: its modules (`autograder`), `sys.modules`
  beyond a lookup by constant name, frames and tracebacks, `gc` object scans, `ctypes`, file
  descriptors it did not open (the worker's channel), stores into library modules, and code
  generated at run time (`exec`/`eval` of a non-constant string).

A name merely mentioned in a comment or string, or a student function that happens to be named
`softmax`, is not a reference to the library's. Nothing here imports or runs student code.
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

MAX_VALUES = 64          # abstract values kept per expression (more: "unknown")
MAX_DEPTH = 150          # nesting of one expression's evaluation
MAX_FINDINGS = 200       # per kind, per submission
MAX_TEXT = 80

ENGINE_ROOTS = {"autograder", "__main__"}
DECOMPOSITION_PREFIXES = ("torch._decomp", "torch._refs", "torch._prims")
FRAME_FUNCTIONS = {
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
    "sys._getframemodulename", "inspect.currentframe", "inspect.stack", "inspect.trace",
    "inspect.getouterframes", "inspect.getinnerframes", "threading.settrace",
    "threading.setprofile", "traceback.walk_stack", "traceback.walk_tb"}
FRAME_ATTRIBUTES = {"f_back", "f_globals", "f_locals", "f_builtins", "f_trace", "tb_frame",
                    "tb_next", "gi_frame", "cr_frame", "ag_frame", "__globals__",
                    "__subclasses__"}
GC_SCANS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
NATIVE_ROOTS = {"ctypes", "_ctypes", "cffi", "marshal"}
# Functions taking a file descriptor as first argument (both, for dup2).
FD_FUNCTIONS = {"os.write", "os.writev", "os.pwrite", "os.pwritev", "os.sendfile", "os.read",
                "os.readv", "os.pread", "os.dup", "os.dup2", "os.fdopen", "os.close",
                "os.ftruncate", "os.set_inheritable", "os.set_blocking", "fcntl.fcntl",
                "fcntl.ioctl", "socket.fromfd", "io.FileIO", "io.open", "builtins.open"}
# Calls that give a descriptor the submission opened itself.
FD_SOURCES = {"os.open", "os.pipe", "os.pipe2", "os.memfd_create", "tempfile.mkstemp",
              "pty.openpty", "os.openpty", "os.eventfd"}
FD_PATH = re.compile(r"/proc/[^/]+/fd|/dev/fd")
CODEGEN = {"builtins.exec", "builtins.eval", "builtins.compile"}
# Roots of the calls whose arguments the channel and patching rules look at.
CALL_RULE_ROOTS = {"builtins", "os", "io", "socket", "fcntl", "pathlib", "glob", "shutil"}
DYNAMIC_IMPORTS = {"builtins.__import__", "importlib.import_module", "importlib.__import__"}
# Modules whose attributes looked up by a computed name may reach the engine.
SENSITIVE_ROOTS = {"sys", "gc", "inspect", "builtins", "os", "socket", "importlib", "ctypes",
                   "threading", "traceback", "types"}
# Library attributes a student may set without touching anything the grader relies on.
HARMLESS_STORES = ("sys.stdout", "sys.stderr", "sys.stdin", "sys.path", "sys.argv",
                   "sys.dont_write_bytecode", "torch.backends.", "pandas.options.",
                   "matplotlib.rcParams")
# Other names for a routine ("softmin(x)" is "softmax(-x)").
EQUIVALENT = {"softmax": ("softmin",)}

INTEGRITY_MESSAGE = "integrity: this submission modifies the grader; flagged for review"


@dataclass(frozen=True)
class Finding:
    """One thing found in the source: where, what the code says, and why it matters."""

    kind: str          # "forbidden" (a library shortcut) or "tamper"
    rule: str          # short id: "library", "method", "computed-name", "engine", "frames"...
    line: int
    code: str          # the expression as written (clipped)
    target: str = ""   # the library path it reaches, for "forbidden" findings
    why: str = ""      # words for the student and the instructor

    def to_json(self) -> dict:
        return {"kind": self.kind, "rule": self.rule, "line": self.line, "code": self.code,
                "target": self.target, "why": self.why}

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}`{self.code}` {self.why}".rstrip()


# ------------------------------------------------------------------ names of routines

def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [w for w in spaced.lower().split("_") if w]


def _subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(w == x for x in it) for w in short)


def names_same_routine(component: str, forbidden_short: str) -> bool:
    """Does a library name (`_softmax`, `LayerNorm`, `_scaled_dot_product_flash_attention`,
    `log_softmax`) name the forbidden routine (`softmax`, `layer_norm`, ...)?"""
    want = _words(forbidden_short)
    if want and want[-1] == "forward" and len(want) > 1:
        want = want[:-1]
    have = _words(component)
    if not want or not have:
        return False
    joined_want, joined_have = "".join(want), "".join(have)
    if joined_want in joined_have or _subsequence(want, have):
        return True
    return any(eq in joined_have for eq in EQUIVALENT.get(joined_want, ()))


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def _disables_function_modes(path: str) -> bool:
    flat = path.replace("_", "").lower()
    return _root(path) == "torch" and ("torchfunction" in flat or "pythondispatch" in flat
                                       or path.startswith("torch.overrides"))


def matches_forbidden(finding: Finding, entry: str) -> bool:
    """Is a reference found in the source the forbidden entry, by any route?"""
    if entry.startswith("autograd.") or "." not in entry:
        return False        # autograd nodes are seen only in the worker's graph
    short = entry.rsplit(".", 1)[1]
    target = finding.target
    if finding.rule == "library":
        if target == entry:
            return True
        return any(names_same_routine(c, short) for c in target.split(".")[1:])
    if finding.rule == "method":
        return entry.startswith(("torch.Tensor.", "numpy.ndarray.")) and \
            names_same_routine(target, short)
    if finding.rule in ("computed-name", "decomposition", "mode-off"):
        return _root(target) == _root(entry)
    return False


# ------------------------------------------------------------------ scopes and bindings

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


_BUILTINS = set(dir(builtins))


class _Collector:
    """Builds the scopes of one module: bindings and the nodes each scope executes."""

    def __init__(self):
        self.scopes: list[Scope] = []
        self.parents: dict[int, ast.AST] = {}

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
        elif isinstance(target, ast.Subscript) and _is_globals_call(target.value):
            key = _fold(target.slice)
            if isinstance(key, str):
                self.bind(self.scopes[0], key, value)

    def link(self, parent: ast.AST, child: ast.AST) -> None:
        self.parents[id(child)] = parent

    def visit(self, scope: Scope, node: ast.AST, top: bool = False) -> None:
        """Record `node` (executed in `scope`) and what it binds; recurse."""
        stack = [(scope, node, top)]
        while stack:
            scope, node, top = stack.pop()
            scope.nodes.append(node)
            kind = type(node)
            if kind in _PLAIN:      # most nodes: nothing bound, nothing opened
                parents = self.parents
                children = list(ast.iter_child_nodes(node))
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
                        inner.bindings[a.arg] = [("param", d, scope.index)]
                if isinstance(node, ast.Lambda):
                    self.link(node, node.body)
                    stack.append((inner, node.body, False))
                else:
                    self.bind(scope, node.name, ("user", inner.index), top)
                    self._prescan_decls(inner, node.body)
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

    def _prescan_decls(self, scope: Scope, body: list[ast.stmt]) -> None:
        for n in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(n, ast.Global):
                scope.globals.update(n.names)
            elif isinstance(n, ast.Nonlocal):
                scope.nonlocals.update(n.names)

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


def _is_globals_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id in ("globals", "vars", "locals") and not node.args


# ------------------------------------------------------------------ constant strings

def _fold(node: ast.AST, depth: int = 0):
    """The constant a small expression always has (strings built from constants), or None."""
    if depth > 30:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (str, int, bytes)) and \
            not isinstance(node.value, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _fold(node.operand, depth + 1)
        return -inner if isinstance(inner, int) else None
    if isinstance(node, ast.BinOp):
        left, right = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
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
                inner = _fold(v.value, depth + 1)
                parts.append(str(inner) if isinstance(inner, (str, int)) else "*")
        return "".join(parts)
    if isinstance(node, ast.Subscript):
        base = _fold(node.value, depth + 1)
        if isinstance(base, str) and isinstance(node.slice, ast.Slice):
            parts = (node.slice.lower, node.slice.upper, node.slice.step)
            bounds = [None if b is None else _fold(b, depth + 1) for b in parts]
            if all(isinstance(b, int) for b, p in zip(bounds, parts) if p is not None) \
                    and bounds[2] != 0:
                return base[slice(*bounds)]
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            base = _fold(func.value, depth + 1)
            args = [_fold(a, depth + 1) for a in node.args]
            if isinstance(base, str) and func.attr == "join" and len(node.args) == 1:
                items = node.args[0]
                if isinstance(items, (ast.List, ast.Tuple)):
                    parts = [_fold(e, depth + 1) for e in items.elts]
                    if all(isinstance(p, str) for p in parts):
                        return base.join(parts)
                if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and \
                        items.func.id == "reversed" and len(items.args) == 1:
                    inner = _fold(items.args[0], depth + 1)
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
            code = _fold(node.args[0], depth + 1)
            return chr(code) if isinstance(code, int) and 0 <= code < 0x110000 else None
        if isinstance(func, ast.Name) and func.id == "str" and len(node.args) == 1:
            inner = _fold(node.args[0], depth + 1)
            return str(inner) if isinstance(inner, (str, int)) else None
    return None


# ------------------------------------------------------------------ the scan

UNKNOWN = ("unknown",)


class _Analysis:
    def __init__(self, tree: ast.Module):
        c = _Collector()
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
        if name in _BUILTINS or name == "__builtins__":
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
                out.add(UNKNOWN)
                if b[1] is not None:
                    out |= self.value(b[1], self.scopes[b[2]], depth + 1)
            else:
                out.add(UNKNOWN)
        self._busy.discard(key)
        result = self._cap(out)
        self._name_memo[key] = result
        return result

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
            folded = _fold(node)
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
            key = _fold(node.slice)
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
        folded = _fold(node)
        if folded is not None:
            return {("const", folded)}
        return {UNKNOWN}

    def _names(self, node: ast.AST, scope: Scope, d: int) -> list[str] | None:
        """The constant strings an expression can be (a literal, or names bound to them)."""
        folded = _fold(node)
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
                    name = _fold(args[0])
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
                    name = _fold(args[0])
                    out.add(("attr", name) if isinstance(name, str) else UNKNOWN)
                elif path in FD_SOURCES or path.endswith(".fileno"):
                    out.add(("fd",))
                else:
                    out.add(("libcall", path))
            elif kind == "dictget" and args:
                name = _fold(args[0])
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
            name = _fold(args[0])
            if ("lib", "sys.modules") in base and isinstance(name, str):
                out.add(("lib", name))
        return out


def _text(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of an odd tree: show nothing rather than fail
        text = "?"
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


class ScanResult:
    """What the scan found, and which graded function reaches which finding."""

    def __init__(self, analysis: _Analysis | None, api: Sequence[str], error: str | None = None):
        self._a = analysis
        self.api = list(api)
        self.error = error
        self._reach: dict[str, set[int]] = {}
        self._forbidden: dict[tuple, list[Finding]] = {}
        self.tamper: list[Finding] = []
        if analysis is not None:
            seen = set()
            for s in analysis.scopes:
                for f in s.tamper:
                    key = (f.rule, f.line, f.code)
                    if key not in seen and len(self.tamper) < MAX_FINDINGS:
                        seen.add(key)
                        self.tamper.append(f)
            self.tamper.sort(key=lambda f: (f.line, f.rule))

    def _closure(self, start: Iterable[int]) -> set[int]:
        """Scopes that may run once `start` runs: what they reference, the class bodies they
        define, and every method of a class they reference."""
        a = self._a
        children: dict[int, list[Scope]] = {}
        for s in a.scopes:
            if s.parent is not None:
                children.setdefault(s.parent.index, []).append(s)
        seen: set[int] = set()
        stack = list(start)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            scope = a.scopes[i]
            stack.extend(scope.edges - seen)
            for c in children.get(i, []):
                if c.kind == "class" or scope.kind == "class":
                    stack.append(c.index)
        return seen

    def reachable(self, function: str) -> set[int]:
        """Indexes of the scopes a graded function can run (its call graph)."""
        if self._a is None:
            return set()
        if function not in self._reach:
            start = {v[1] for v in self._a.name_values(self._a.module, function, 0)
                     if v[0] in ("user", "instance")}
            self._reach[function] = self._closure(start)
        return self._reach[function]

    def _direct(self, function: str) -> list[Finding]:
        """The graded name bound to a library object itself (`softmax = torch.softmax`)."""
        return [Finding("forbidden", "library", 0, f"{function} = {v[1]}", v[1])
                for v in self._a.name_values(self._a.module, function, 0) if v[0] == "lib"]

    def forbidden(self, function: str, entries: Sequence[str]) -> list[Finding]:
        """The shortcuts among `entries` (a question's forbidden list) the function reaches."""
        if self._a is None or not entries:
            return []
        key = (function, tuple(entries))
        if key in self._forbidden:
            return self._forbidden[key]
        found, seen = [], set()
        candidates = self._direct(function)
        for i in sorted(self.reachable(function)):
            for rule, line, node, target in self._a.scopes[i].refs:
                f = Finding("forbidden", rule, line, "", target)
                if any(matches_forbidden(f, e) for e in entries):
                    candidates.append(replace(f, code=_text(node)))   # only what is shown
        for f in candidates:
            for entry in entries:
                if matches_forbidden(f, entry) and (f.line, f.code) not in seen:
                    seen.add((f.line, f.code))
                    found.append(replace(f, why=_forbidden_why(f, entry)))
                    break
        self._forbidden[key] = found[:20]
        return self._forbidden[key]

    def tamper_reach(self) -> dict[Finding, set[str] | None]:
        """For each tampering finding: the graded functions that can run it, or None when it
        can run while the file is imported (or cannot be placed: then assume the worst)."""
        out: dict[Finding, set[str] | None] = {}
        if self._a is None:
            return out
        a = self._a
        at_import = self._closure([0])
        where: dict[Finding, set[int]] = {}
        for s in a.scopes:
            for f in s.tamper:
                where.setdefault(f, set()).add(s.index)
        for f, scopes in where.items():
            if scopes & at_import:
                out[f] = None
                continue
            fns = {fn for fn in self.api if scopes & self.reachable(fn)}
            out[f] = fns or None
        return out


def _forbidden_why(f: Finding, entry: str) -> str:
    if f.rule == "method":
        return f"calls the library's `{f.target}` method"
    if f.rule == "computed-name":
        return f"looks up a library function of `{f.target}` by a name built at run time"
    if f.rule == "decomposition":
        return "uses torch's decomposition modules (library implementations)"
    if f.rule == "mode-off":
        return "switches off the grader's detection of library calls"
    return f"reaches `{f.target}`" if f.code != f.target else ""


# ------------------------------------------------------------------ rules over each scope

def _is_chain_inner(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return isinstance(parent, ast.Attribute) and parent.value is node


def _analyse(a: _Analysis) -> None:
    for scope in a.scopes:
        for node in scope.nodes:
            try:
                _rules(a, scope, node)
            except RecursionError:
                scope.tamper.append(Finding("tamper", "unscannable", _line(node), "…",
                                            why="is nested too deeply to be checked"))


def _line(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0) or 0)


def _rules(a: _Analysis, scope: Scope, node: ast.AST) -> None:
    line = _line(node)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [al.name for al in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if not node.level else []
        for n in names:
            root = _root(n)
            if root in ENGINE_ROOTS:
                scope.tamper.append(Finding("tamper", "engine", line, _text(node),
                                            why="imports the grader's own modules"))
            elif root in NATIVE_ROOTS:
                scope.tamper.append(Finding("tamper", "native", line, _text(node),
                                            why="loads native-code access (ctypes/marshal), "
                                                "which can rewrite the grader in memory"))
        return
    if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRIBUTES:
        scope.tamper.append(Finding("tamper", "frames", line, _text(node),
                                    why="reads stack frames or function globals, where the "
                                        "grader's own state lives"))
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for t in targets:
            _store_rule(a, scope, t, line)
        return
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and \
            isinstance(getattr(node, "ctx", ast.Load()), ast.Load) and \
            not _is_chain_inner(node, a.parents):
        values = a.value(node, scope)
        _value_rules(a, scope, node, values, line)
    if isinstance(node, ast.Call):
        _call_rules(a, scope, node, line)


def _store_rule(a: _Analysis, scope: Scope, target: ast.AST, line: int) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            _store_rule(a, scope, t, line)
        return
    base = None
    if isinstance(target, ast.Attribute):
        base, attr = target.value, target.attr
    elif isinstance(target, ast.Subscript):
        base, attr = target.value, None
    if base is None:
        return
    for v in a.value(base, scope):
        path = None
        if v[0] == "lib" and attr is not None:
            path = f"{v[1]}.{attr}"
        elif v[0] == "dict" or v == ("lib", "builtins") or v == ("lib", "sys.modules"):
            path = v[1]
        if path and not path.startswith(HARMLESS_STORES):
            scope.tamper.append(Finding("tamper", "patch", line, _text(target),
                                        why=f"replaces `{path}` in a module the grader uses"))
            return


def _value_rules(a: _Analysis, scope: Scope, node: ast.AST, values: frozenset,
                 line: int) -> None:
    for v in values:
        kind = v[0]
        if kind == "user":
            if v[1] != scope.index:
                scope.edges.add(v[1])
        elif kind == "instance":
            scope.edges.add(v[1])
        elif kind == "attr":
            scope.refs.append(("method", line, node, v[1]))
            if v[1] in FRAME_ATTRIBUTES and isinstance(node, ast.Call):
                scope.tamper.append(Finding("tamper", "frames", line, _text(node),
                                            why="reads stack frames or function globals"))
        elif kind == "dyn":
            scope.refs.append(("computed-name", line, node, v[1]))
            if _root(v[1]) in SENSITIVE_ROOTS:
                scope.tamper.append(Finding("tamper", "computed-name", line, _text(node),
                                            why=f"looks up attributes of `{v[1]}` by a name "
                                                "built at run time"))
        elif kind == "lib":
            _lib_rules(a, scope, node, v[1], line)


def _lib_rules(a: _Analysis, scope: Scope, node: ast.AST, path: str, line: int) -> None:
    root = _root(path)
    if path.startswith(DECOMPOSITION_PREFIXES):
        scope.refs.append(("decomposition", line, node, path))
    elif _disables_function_modes(path):
        scope.refs.append(("mode-off", line, node, path))
    elif root != "builtins":        # no question forbids a builtin
        scope.refs.append(("library", line, node, path))
    if root not in ENGINE_ROOTS and root not in NATIVE_ROOTS and root not in SENSITIVE_ROOTS:
        return
    text = _text(node)
    if root in ENGINE_ROOTS and not isinstance(node, ast.Name):
        scope.tamper.append(Finding("tamper", "engine", line, text,
                                    why="reaches the grader's own modules"))
    elif root in NATIVE_ROOTS:
        scope.tamper.append(Finding("tamper", "native", line, text,
                                    why="uses native-code access (ctypes/marshal)"))
    elif path in FRAME_FUNCTIONS or path.rsplit(".", 1)[-1] in FRAME_ATTRIBUTES:
        scope.tamper.append(Finding("tamper", "frames", line, text,
                                    why="reads stack frames, where the grader's own state "
                                        "lives"))
    elif path in GC_SCANS:
        scope.tamper.append(Finding("tamper", "gc", line, text,
                                    why="scans the garbage collector's objects, the grader's "
                                        "included"))
    elif path == "sys.modules" or path.startswith("sys.modules."):
        if not _benign_modules_use(a, node, path):
            scope.tamper.append(Finding("tamper", "sys.modules", line, text,
                                        why="reads or changes the loaded modules (the "
                                            "grader's included)"))
    elif path in CODEGEN:
        parent = a.parents.get(id(node))
        if not (isinstance(parent, ast.Call) and parent.func is node and parent.args
                and isinstance(_fold(parent.args[0]), str)):
            scope.tamper.append(Finding("tamper", "codegen", line, text,
                                        why="runs code built at run time, which cannot be "
                                            "checked"))
    elif path in DYNAMIC_IMPORTS:
        parent = a.parents.get(id(node))
        if not (isinstance(parent, ast.Call) and parent.func is node and parent.args
                and isinstance(_fold(parent.args[0]), str)):
            scope.tamper.append(Finding("tamper", "computed-name", line, text,
                                        why="imports a module named at run time"))


def _benign_modules_use(a: _Analysis, node: ast.AST, path: str) -> bool:
    """`sys.modules["torch"]`, `sys.modules.get("numpy")`, `"x" in sys.modules`."""
    parent = a.parents.get(id(node))
    if path == "sys.modules":
        if isinstance(parent, ast.Subscript) and parent.value is node and \
                isinstance(parent.ctx, ast.Load) and isinstance(_fold(parent.slice), str):
            return True
        return isinstance(parent, ast.Compare) and node in parent.comparators and \
            all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    if path in ("sys.modules.get", "sys.modules.__contains__", "sys.modules.__getitem__"):
        return isinstance(parent, ast.Call) and parent.func is node and bool(parent.args) \
            and isinstance(_fold(parent.args[0]), str)
    return False


def _call_rules(a: _Analysis, scope: Scope, node: ast.Call, line: int) -> None:
    funcs = a.value(node.func, scope)
    paths = {v[1] for v in funcs if v[0] == "lib" and _root(v[1]) in CALL_RULE_ROOTS}
    if not paths and not any(v[0] == "lib" and v[1] in CODEGEN for v in funcs):
        return
    text = _text(node)
    for path in paths:
        if path in ("builtins.setattr", "builtins.delattr") and node.args:
            for v in a.value(node.args[0], scope):
                if v[0] == "lib":
                    name = _fold(node.args[1]) if len(node.args) > 1 else None
                    full = f"{v[1]}.{name}" if isinstance(name, str) else v[1]
                    if not full.startswith(HARMLESS_STORES):
                        scope.tamper.append(Finding(
                            "tamper", "patch", line, text,
                            why=f"replaces `{full}` in a module the grader uses"))
                        break
        if path == "os.closerange":
            scope.tamper.append(Finding("tamper", "channel", line, text,
                                        why="closes file descriptors it did not open (the "
                                            "grader's channel)"))
        if path == "socket.socket" and (len(node.args) >= 4 or any(
                k.arg == "fileno" for k in node.keywords)):
            scope.tamper.append(Finding("tamper", "channel", line, text,
                                        why="opens a socket on an existing descriptor (the "
                                            "grader's channel)"))
        if path in FD_FUNCTIONS and node.args:
            fds = node.args[:2] if path == "os.dup2" else node.args[:1]
            for fd in fds:
                if not _own_fd(a, scope, fd, path):
                    scope.tamper.append(Finding(
                        "tamper", "channel", line, text,
                        why="uses a file descriptor it did not open (the grader's channel)"))
                    break
        if _root(path) in ("os", "io", "builtins", "pathlib", "glob", "shutil", "socket"):
            for arg in node.args[:2]:
                s = _fold(arg)
                if isinstance(s, str) and FD_PATH.search(s):
                    scope.tamper.append(Finding(
                        "tamper", "channel", line, text,
                        why="opens the process's descriptors by path (the grader's channel)"))
                    break
    for v in funcs:
        # exec/eval of a constant: its code is scanned as if written here
        if v == ("lib", "builtins.exec") or v == ("lib", "builtins.eval"):
            src = _fold(node.args[0]) if node.args else None
            if isinstance(src, str):
                _scan_snippet(scope, src, line)


def _own_fd(a: _Analysis, scope: Scope, fd: ast.AST, path: str) -> bool:
    if path in ("builtins.open", "io.open", "io.FileIO"):
        # a path (or anything not an integer) is a file, not a descriptor
        return not any(v[0] == "const" and isinstance(v[1], int) and v[1] > 2 or v[0] == "fd"
                       for v in a.value(fd, scope)) or _all_own(a.value(fd, scope))
    return _all_own(a.value(fd, scope))


def _all_own(values: frozenset) -> bool:
    return bool(values) and all(
        v[0] == "fd" or v[0] == "const" and isinstance(v[1], int) and 0 <= v[1] <= 2
        for v in values)


def _scan_snippet(scope: Scope, src: str, line: int) -> None:
    if len(src) > 100_000:
        return
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    inner = _Analysis(tree)
    _analyse(inner)
    for s in inner.scopes:
        for f in s.tamper:
            scope.tamper.append(Finding(f.kind, f.rule, line, f.code, f.target, f.why))
        for rule, _, node, target in s.refs:
            scope.refs.append((rule, line, node, target))


# ------------------------------------------------------------------ entry points

def scan_source(sources: str | Sequence[str], api: Sequence[str] = ()) -> ScanResult:
    """Scan a .py file's source, or a notebook's code cells (run in order as one module).
    Sources that do not parse are left out (the grader reports their syntax errors)."""
    if isinstance(sources, str):
        sources = [sources]
    body: list[ast.stmt] = []
    try:
        for src in sources:
            try:
                body += ast.parse(src).body
            except (SyntaxError, ValueError):
                continue
        analysis = _Analysis(ast.Module(body=body, type_ignores=[]))
        _analyse(analysis)
    except (RecursionError, MemoryError) as e:
        return ScanResult(None, api, error=type(e).__name__)
    return ScanResult(analysis, api)
