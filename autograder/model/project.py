"""Where the engine and the project's files are, and what the project pins: one place for
each, so the build, the result cache and the workflows cannot disagree."""
from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

ENGINE_DIR = Path(__file__).resolve().parent.parent   # the `autograder` package
PROJECT_ROOT = ENGINE_DIR.parent
ASSIGNMENTS_DIR = PROJECT_ROOT / "assignments"
PYPROJECT = PROJECT_ROOT / "pyproject.toml"
CONSTRAINTS = PROJECT_ROOT / "constraints.txt"
# PyTorch's index of CPU-only wheels (no multi-GB CUDA download).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def engine_files(engine_dir: Path | None = None) -> list[Path]:
    """Every file of the engine, subpackages included, without caches; sorted."""
    root = engine_dir or ENGINE_DIR
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and "__pycache__" not in p.relative_to(root).parts
                  and p.suffix not in (".pyc", ".pyo"))


def hash_engine(h, engine_dir: Path | None = None) -> None:
    """Feed `h` (a hashlib object) every engine file, each named by its path in the package
    (a moved module changes the hash as an edited one does)."""
    root = engine_dir or ENGINE_DIR
    for p in engine_files(root):
        h.update(p.relative_to(root).as_posix().encode())
        h.update(p.read_bytes())


def engine_version(engine_dir: Path | None = None) -> str:
    """A short hash of the engine's files, the part of the result cache's key that is the
    engine: the same for two copies of one engine (a bundle's and the instructor's)."""
    h = hashlib.sha256()
    hash_engine(h, engine_dir)
    return h.hexdigest()[:12]


def normalize(name: str) -> str:
    """A distribution name as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]


def constraint_pins() -> dict[str, str]:
    """{normalized name: version} from constraints.txt (empty when there is none)."""
    pins = {}
    if CONSTRAINTS.is_file():
        for line in CONSTRAINTS.read_text().splitlines():
            m = re.match(r"\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*(\S+)", line)
            if m:
                pins[normalize(m.group(1))] = m.group(2)
    return pins


def dependencies() -> list[str]:
    """The engine's dependencies as pyproject.toml lists them."""
    return tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]


def torch_requirement() -> str:
    """`torch==<version>` as pinned (constraints.txt, else pyproject), without a local tag
    such as `+cpu` (the CPU index serves the plain version)."""
    version = constraint_pins().get("torch")
    if version:
        return f"torch=={version.split('+', 1)[0]}"
    if PYPROJECT.is_file():
        for dep in dependencies():
            if normalize(requirement_name(dep)) == "torch":
                return dep.split("+", 1)[0]
    return "torch"
