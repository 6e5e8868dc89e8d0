"""The rules applied to every node a scope executes: they record the library references the
shortcut check matches later (`shortcuts`), the edges of the call graph, and the tampering
findings (the engine's modules, `sys.modules`, frames, `gc` scans, native code, the worker's
file descriptors, stores into library modules, code generated at run time)."""
from __future__ import annotations

import ast

from .budget import MAX_SNIPPET_CHARS, ScanCutShort
from .model import Scope
from .shortcuts import disables_function_modes
from .values import Analysis
from .vocabulary import (CALL_RULE_ROOTS, CODEGEN, DECOMPOSITION_PREFIXES, DYNAMIC_IMPORTS,
                         ENGINE_ROOTS, ENGINE_STORE, FD_FUNCTIONS, FD_PATH, FRAME_ATTRIBUTES,
                         FRAME_FUNCTIONS, GC_SCANS, HARMLESS_STORES, NATIVE_ROOTS,
                         SENSITIVE_ROOTS, Finding, code_text, line_of, root_of)

def _is_chain_inner(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    parent = parents.get(id(node))
    return isinstance(parent, ast.Attribute) and parent.value is node


def analyse(a: Analysis) -> None:
    step = a.budget.step
    for scope in a.scopes:
        for node in scope.nodes:
            step()
            try:
                _rules(a, scope, node)
            except RecursionError:
                scope.tamper.append(Finding("tamper", "unscannable", line_of(node), "…",
                                            why="is nested too deeply to be checked"))


def _rules(a: Analysis, scope: Scope, node: ast.AST) -> None:
    line = line_of(node)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [al.name for al in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if not node.level else []
        for n in names:
            root = root_of(n)
            if root in ENGINE_ROOTS:
                scope.tamper.append(Finding("tamper", "engine", line, code_text(node),
                                            why="imports the grader's own modules"))
            elif root in NATIVE_ROOTS:
                scope.tamper.append(Finding("tamper", "native", line, code_text(node),
                                            why="loads native-code access (ctypes/marshal), "
                                                "which can rewrite the grader in memory"))
        return
    if isinstance(node, ast.Attribute) and node.attr in FRAME_ATTRIBUTES:
        scope.tamper.append(Finding("tamper", "frames", line, code_text(node),
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


def _store_rule(a: Analysis, scope: Scope, target: ast.AST, line: int) -> None:
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
        elif v == ("lib", "sys.modules") and isinstance(target, ast.Subscript):
            key = a.fold(target.slice)      # the module replaced, when the key is constant
            path = key if isinstance(key, str) else v[1]
        elif v[0] == "dict" or v == ("lib", "builtins") or v == ("lib", "sys.modules"):
            path = v[1]
        if path and not path.startswith(HARMLESS_STORES):
            scope.tamper.append(_patch_finding(path, line, code_text(target)))
            return


def _patch_finding(path: str, line: int, code: str) -> Finding:
    """A store into a library module is a doubt; into the engine's own modules it is proof."""
    if root_of(path) in ENGINE_ROOTS:
        return Finding("tamper", ENGINE_STORE, line, code,
                       why=f"replaces `{path}` in the grader's own code")
    return Finding("tamper", "patch", line, code,
                   why=f"replaces `{path}` in a module the grader uses")


def _value_rules(a: Analysis, scope: Scope, node: ast.AST, values: frozenset,
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
                scope.tamper.append(Finding("tamper", "frames", line, code_text(node),
                                            why="reads stack frames or function globals"))
        elif kind == "dyn":
            scope.refs.append(("computed-name", line, node, v[1]))
            if root_of(v[1]) in SENSITIVE_ROOTS:
                scope.tamper.append(Finding("tamper", "computed-name", line, code_text(node),
                                            why=f"looks up attributes of `{v[1]}` by a name "
                                                "built at run time"))
        elif kind == "lib":
            _lib_rules(a, scope, node, v[1], line)


def _lib_rules(a: Analysis, scope: Scope, node: ast.AST, path: str, line: int) -> None:
    root = root_of(path)
    if path.startswith(DECOMPOSITION_PREFIXES):
        scope.refs.append(("decomposition", line, node, path))
    elif disables_function_modes(path):
        scope.refs.append(("mode-off", line, node, path))
    elif root != "builtins":        # no question forbids a builtin
        scope.refs.append(("library", line, node, path))
    if root not in ENGINE_ROOTS and root not in NATIVE_ROOTS and root not in SENSITIVE_ROOTS:
        return
    if root in ENGINE_ROOTS and not isinstance(node, ast.Name):
        scope.tamper.append(Finding("tamper", "engine", line, code_text(node),
                                    why="reaches the grader's own modules"))
    elif root in NATIVE_ROOTS:
        scope.tamper.append(Finding("tamper", "native", line, code_text(node),
                                    why="uses native-code access (ctypes/marshal)"))
    elif path in FRAME_FUNCTIONS or path.rsplit(".", 1)[-1] in FRAME_ATTRIBUTES:
        scope.tamper.append(Finding("tamper", "frames", line, code_text(node),
                                    why="reads stack frames, where the grader's own state "
                                        "lives"))
    elif path in GC_SCANS:
        scope.tamper.append(Finding("tamper", "gc", line, code_text(node),
                                    why="scans the garbage collector's objects, the grader's "
                                        "included"))
    elif path == "sys.modules" or path.startswith("sys.modules."):
        if not _benign_modules_use(a, node, path):
            scope.tamper.append(Finding("tamper", "sys.modules", line, code_text(node),
                                        why="reads or changes the loaded modules (the "
                                            "grader's included)"))
    elif path in CODEGEN:
        parent = a.parents.get(id(node))
        if not (isinstance(parent, ast.Call) and parent.func is node and parent.args
                and isinstance(a.fold(parent.args[0]), str)):
            scope.tamper.append(Finding("tamper", "codegen", line, code_text(node),
                                        why="runs code built at run time, which cannot be "
                                            "checked"))
    elif path in DYNAMIC_IMPORTS:
        parent = a.parents.get(id(node))
        if not (isinstance(parent, ast.Call) and parent.func is node and parent.args
                and isinstance(a.fold(parent.args[0]), str)):
            scope.tamper.append(Finding("tamper", "computed-name", line, code_text(node),
                                        why="imports a module named at run time"))


def _benign_modules_use(a: Analysis, node: ast.AST, path: str) -> bool:
    """`sys.modules["torch"]`, `sys.modules.get("numpy")`, `"x" in sys.modules`."""
    parent = a.parents.get(id(node))
    if path == "sys.modules":
        if isinstance(parent, ast.Subscript) and parent.value is node and \
                isinstance(parent.ctx, ast.Load) and isinstance(a.fold(parent.slice), str):
            return True
        return isinstance(parent, ast.Compare) and node in parent.comparators and \
            all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)
    if path in ("sys.modules.get", "sys.modules.__contains__", "sys.modules.__getitem__"):
        return isinstance(parent, ast.Call) and parent.func is node and bool(parent.args) \
            and isinstance(a.fold(parent.args[0]), str)
    return False


def _call_rules(a: Analysis, scope: Scope, node: ast.Call, line: int) -> None:
    funcs = a.value(node.func, scope)
    paths = {v[1] for v in funcs if v[0] == "lib" and root_of(v[1]) in CALL_RULE_ROOTS}
    if not paths and not any(v[0] == "lib" and v[1] in CODEGEN for v in funcs):
        return
    for path in paths:
        if path in ("builtins.setattr", "builtins.delattr") and node.args:
            for v in a.value(node.args[0], scope):
                if v[0] == "lib":
                    name = a.fold(node.args[1]) if len(node.args) > 1 else None
                    full = f"{v[1]}.{name}" if isinstance(name, str) else v[1]
                    if not full.startswith(HARMLESS_STORES):
                        scope.tamper.append(_patch_finding(full, line, code_text(node)))
                        break
        if path == "os.closerange":
            scope.tamper.append(Finding("tamper", "channel", line, code_text(node),
                                        why="closes file descriptors it did not open (the "
                                            "grader's channel)"))
        if path == "socket.socket" and (len(node.args) >= 4 or any(
                k.arg == "fileno" for k in node.keywords)):
            scope.tamper.append(Finding("tamper", "channel", line, code_text(node),
                                        why="opens a socket on an existing descriptor (the "
                                            "grader's channel)"))
        if path in FD_FUNCTIONS and node.args:
            fds = node.args[:2] if path == "os.dup2" else node.args[:1]
            for fd in fds:
                if not _own_fd(a, scope, fd, path):
                    scope.tamper.append(Finding(
                        "tamper", "channel", line, code_text(node),
                        why="uses a file descriptor it did not open (the grader's channel)"))
                    break
        if root_of(path) in ("os", "io", "builtins", "pathlib", "glob", "shutil", "socket"):
            for arg in node.args[:2]:
                s = a.fold(arg)
                if isinstance(s, str) and FD_PATH.search(s):
                    scope.tamper.append(Finding(
                        "tamper", "channel", line, code_text(node),
                        why="opens the process's descriptors by path (the grader's channel)"))
                    break
    for v in funcs:
        # exec/eval of a constant: its code is scanned as if written here
        if v == ("lib", "builtins.exec") or v == ("lib", "builtins.eval"):
            src = a.fold(node.args[0]) if node.args else None
            if isinstance(src, str):
                _scan_snippet(a, scope, src, line)


def _own_fd(a: Analysis, scope: Scope, fd: ast.AST, path: str) -> bool:
    if path in ("builtins.open", "io.open", "io.FileIO"):
        # a path (or anything not an integer) is a file, not a descriptor
        return not any(v[0] == "const" and isinstance(v[1], int) and v[1] > 2 or v[0] == "fd"
                       for v in a.value(fd, scope)) or _all_own(a.value(fd, scope))
    return _all_own(a.value(fd, scope))


def _all_own(values: frozenset) -> bool:
    return bool(values) and all(
        v[0] == "fd" or v[0] == "const" and isinstance(v[1], int) and 0 <= v[1] <= 2
        for v in values)


def _scan_snippet(a: Analysis, scope: Scope, src: str, line: int) -> None:
    if len(src) > MAX_SNIPPET_CHARS:       # not skipped: it could hide anything
        raise ScanCutShort(f"code run by exec() or eval() longer than "
                           f"{MAX_SNIPPET_CHARS:,} characters")
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    inner = Analysis(tree, a.budget)     # its nodes count against the file's budget
    analyse(inner)
    for s in inner.scopes:
        for f in s.tamper:
            scope.tamper.append(Finding(f.kind, f.rule, line, f.code, f.target, f.why))
        for rule, _, node, target in s.refs:
            scope.refs.append((rule, line, node, target))
