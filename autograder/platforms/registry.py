"""One small interface for every platform the engine builds for or runs on, and the registry
that `autograder build` and `autograder lint` iterate.

A platform is a folder of this package whose `__init__.py` defines `PLATFORM`: its name, what it
is, the module `python -m` runs there (if any), what it builds into `autograder build`'s output
folder, the `assignment.toml` table it reads and the lint of that table. A new platform is a new
folder; nothing else iterates platforms by name.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..model.assignment import Assignment

# A lint finding: (file, line, what is wrong, the fix), made a `LintError` by the lint.
Finding = tuple[Path, int, str, str]


@dataclass(frozen=True)
class BuildOptions:
    """What `autograder build`'s flags change."""

    otter: bool = True                  # `--no-otter` leaves otter's zip out
    classroom50_hidden: bool = False    # `--classroom50-hidden` ships the hidden cases there


@dataclass(frozen=True)
class Platform:
    name: str
    title: str
    rank: int                           # where it comes in `autograder build`'s list
    runner: str | None = None           # the module `python -m` runs on the platform
    # Writes the platform's files under the output folder: {what: path}, in build's order.
    build: Callable[[Assignment, Path, BuildOptions], dict[str, Path]] | None = None
    # The `assignment.toml` table the platform reads and its keys.
    settings: dict[str, set[str]] = field(default_factory=dict)
    # Findings about those settings: (toml path, the parsed config, line_of(table, key)).
    lint: Callable[[Path, dict, Callable[[str, str], int]], list[Finding]] | None = None


def platforms() -> list[Platform]:
    """Every platform, in build order (each package imports its heavy parts only when used)."""
    found = []
    for info in pkgutil.iter_modules(_package_path()):
        if info.ispkg:
            module = importlib.import_module(f"{__package__}.{info.name}")
            platform = getattr(module, "PLATFORM", None)
            if isinstance(platform, Platform):
                found.append(platform)
    return sorted(found, key=lambda p: p.rank)


def _package_path() -> list[str]:
    return [str(Path(__file__).parent)]


def settings_tables() -> dict[str, set[str]]:
    """The `assignment.toml` tables the platforms read, with their keys (for the lint)."""
    tables: dict[str, set[str]] = {}
    for p in platforms():
        for table, keys in p.settings.items():
            tables.setdefault(table, set()).update(keys)
    return tables


def build_all(assignment: Assignment, out: Path, options: BuildOptions | None = None
              ) -> dict[str, Path]:
    """Every platform's build into `out`: {what: path}."""
    options = options or BuildOptions()
    out.mkdir(parents=True, exist_ok=True)
    built: dict[str, Path] = {}
    for p in platforms():
        if p.build is not None:
            built.update(p.build(assignment, out, options))
    return built


def lint_settings(toml_path: Path, config: dict,
                  line_of: Callable[[str, str], int]) -> list[Finding]:
    """Every platform's findings about its settings in `assignment.toml`."""
    return [f for p in platforms() if p.lint is not None
            for f in p.lint(toml_path, config, line_of)]
