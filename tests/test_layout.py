"""The engine's layout: no import cycles anywhere, and a top level that holds only the grading
pipeline of one submission and the CLI (platforms, the course's term, authoring, the build,
the sandbox, diagnosis and the source scan live in packages of their own)."""
from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

ENGINE = ROOT / "autograder"
# The pipeline of one submission (inputs -> cases -> run -> checks -> results -> render) and the
# CLI; a new module that serves one platform or the term belongs in a package instead.
TOP_LEVEL_BUDGET = 16


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Engine modules a file imports at run time, at module level or inside a function;
    `from . import x` counts x when x is a module. Imports for type checkers only do not."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    me = module_name(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            # the deepest engine module the name points at
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != me:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = [p for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            # a package's __init__ re-exporting its own modules is not a cycle of the layout
            if w == v.rpartition(".")[0] and v.startswith(w + "."):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_in_the_engine():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    # so that the test above cannot pass on a graph it failed to read
    graph = import_graph()
    assert graph["autograder.grade"], "no imports read"
    graph["autograder.status"] = graph["autograder.status"] | {"autograder.grade"}
    assert any("autograder.status" in c for c in cycles(graph))


def test_top_level_keeps_only_the_pipeline_and_the_cli():
    top = sorted(p.stem for p in ENGINE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert len(top) <= TOP_LEVEL_BUDGET, top
    packages = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").is_file()}
    assert {"platforms", "course", "authoring", "build", "sandbox", "diagnose",
            "static_scan"} <= packages


def test_each_package_says_what_it_holds():
    for init in sorted(ENGINE.glob("*/__init__.py")):
        assert ast.get_docstring(ast.parse(init.read_text())), init.parent.name
