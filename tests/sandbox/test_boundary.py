"""The sandbox package stands alone: the fork server mounts only it, so it may import nothing
from the rest of the engine (an import there would fail inside bubblewrap, or worse, pull the
trusted side's code into the student's process)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "autograder"
SANDBOX = ENGINE / "sandbox"


def _imports(path: Path) -> list[str]:
    """Every module a file imports, relative imports resolved against autograder.sandbox."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append(node.module or "")
            else:
                base = ["autograder", "sandbox"][: 3 - node.level]
                found.append(".".join(base + ([node.module] if node.module else [])))
    return found


def test_sandbox_imports_nothing_from_the_rest_of_the_engine():
    offenders = []
    for path in sorted(SANDBOX.rglob("*.py")):
        for name in _imports(path):
            if (name == "autograder" or name.startswith("autograder.")) and \
                    not (name == "autograder.sandbox" or name.startswith("autograder.sandbox.")):
                offenders.append(f"{path.name}: {name}")
    assert offenders == []


def test_sandbox_package_imports_alone(tmp_path):
    """What the fork server sees under bubblewrap: the package and an empty top level."""
    (tmp_path / "autograder").mkdir()
    shutil.copy(ENGINE / "__init__.py", tmp_path / "autograder" / "__init__.py")
    shutil.copytree(SANDBOX, tmp_path / "autograder" / "sandbox",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "import autograder.sandbox.forkserver, autograder.sandbox.worker, "
            "autograder.sandbox.session, autograder.sandbox.protocol; "
            "import autograder; print(autograder.__file__)")
    r = subprocess.run([sys.executable, "-s", "-c", code, str(tmp_path)], capture_output=True,
                       text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith(str(tmp_path))


def test_grader_side_import_of_the_sandbox_does_not_load_torch():
    """The class run's main process starts grading processes without paying for torch."""
    code = ("import sys; import autograder.sandbox; "
            "print(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ENGINE.parent, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
