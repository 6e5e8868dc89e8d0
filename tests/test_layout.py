"""The engine's layout (docs/layout.md): no import cycles anywhere, packages on floors that
import only the floors below them, and a top level that holds only the entry point and the
public faces for assignment authors."""
from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

ENGINE = ROOT / "autograder"


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
    assert graph["autograder.grading.grade"], "no imports read"
    graph["autograder.model.status"] = graph["autograder.model.status"] | {"autograder.grading.grade"}
    assert any("autograder.model.status" in c for c in cycles(graph))


def test_top_level_holds_only_the_entry_and_the_faces():
    top = sorted(p.stem for p in ENGINE.glob("*.py"))
    assert top == sorted(["__init__", "__main__", *FACES])


def test_each_package_says_what_it_holds():
    for init in sorted(ENGINE.glob("*/__init__.py")):
        assert ast.get_docstring(ast.parse(init.read_text())), init.parent.name


# ------------------------------------------------------------------ packages by floor

# The engine's packages, bottom floor first. A package imports only packages on floors below
# its own (never one beside it or above it): the values at the bottom, then checking one case,
# naming mistakes, grading one submission and its feedback, the instructor's term, the
# platforms, and at the top the authors' tools, the developers' yardsticks and the CLI.
FLOORS: list[set[str]] = [
    {"model", "sandbox", "static_scan", "memo"},
    {"intake", "pictures", "written", "console"},
    {"checking"},
    {"diagnose"},
    {"grading", "feedback"},
    {"course"},
    {"platforms"},
    {"authoring", "yardsticks"},
    {"cli"},
]
# The public faces for authors, the only modules at the top level besides the entry point.
FACES = {"cases": "checking", "catalogue": "diagnose"}
# What a face imports besides its package, each with its reason.
FACE_LINKS = {
    # Otter runs question files itself, with no runner of this engine: the face they import is
    # where a check in otter's run gets the notebook's naming (imported when a check fails).
    ("cases", "platforms"),
}
# Imports that still run upward, each with the change that removes it.
UPWARD: set[tuple[str, str]] = set()


def package_of(module: str) -> str:
    """`autograder.grading.grade` -> "grading"; a top-level module is its own name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        mine = package_of(module)
        for target in targets:
            theirs = package_of(target)
            if theirs and theirs != mine:
                graph.setdefault(mine, set()).add(theirs)
    return graph


def floor_of(package: str) -> int:
    for i, floor in enumerate(FLOORS):
        if package in floor:
            return i
    raise AssertionError(f"autograder/{package} is on no floor of tests/test_layout.py: "
                         "place it (docs/layout.md says where a change goes)")


def test_every_package_is_on_one_floor():
    packages = {p.name for p in ENGINE.iterdir() if (p / "__init__.py").is_file()}
    placed = [p for floor in FLOORS for p in floor]
    assert len(placed) == len(set(placed))
    assert packages == set(placed), (packages ^ set(placed))


def test_packages_import_only_floors_below_their_own():
    wrong = []
    for package, targets in package_graph().items():
        if package in FACES or package in ("__main__", ""):
            continue
        for target in targets:
            if target in FACES:
                wrong.append(f"{package} -> {target} (a face is for assignments, not the engine)")
            elif floor_of(target) >= floor_of(package) and (package, target) not in UPWARD:
                wrong.append(f"{package} (floor {floor_of(package)}) -> {target} "
                             f"(floor {floor_of(target)})")
    assert wrong == []


def test_the_upward_imports_left_are_still_there():
    """An entry of UPWARD that no longer exists is removed from the list, so that it cannot
    come back unnoticed."""
    graph = package_graph()
    assert {(a, b) for a, b in UPWARD if b not in graph.get(a, set())} == set()


def test_the_bottom_floor_imports_nothing_of_the_engine():
    graph = package_graph()
    assert {p: graph[p] for p in FLOORS[0] if graph.get(p)} == {}


def test_no_product_package_imports_the_cli_or_the_yardsticks():
    graph = package_graph()
    product = [p for floor in FLOORS for p in floor if p not in ("cli", "yardsticks")]
    assert {p: graph[p] & {"cli", "yardsticks"} for p in product
            if graph.get(p, set()) & {"cli", "yardsticks"}} == {}


def test_the_faces_import_only_their_package():
    graph = package_graph()
    assert {face: graph.get(face, set()) for face in FACES} == \
        {face: {package} | {b for a, b in FACE_LINKS if a == face}
         for face, package in FACES.items()}


def private_names_used_across_modules() -> list[str]:
    """`from module import _name` and `module._name` where the module is another engine
    module: a private name is its module's own business."""
    files = [p for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    found = []
    for path in files:
        tree = ast.parse(path.read_text())
        me = module_name(path)
        package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
        engine_aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1])
                    target = f"{base}.{node.module}" if node.module else base
                else:
                    target = node.module or ""
                for a in node.names:
                    if f"{target}.{a.name}" in modules:
                        engine_aliases.add(a.asname or a.name)
                    elif target in modules and a.name.startswith("_") \
                            and not a.name.startswith("__"):
                        found.append(f"{me}: from {target} import {a.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in engine_aliases and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                found.append(f"{me}: {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules():
    assert private_names_used_across_modules() == []
