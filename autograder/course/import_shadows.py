"""Top-level modules in a student's repository that could shadow an import.

A repository's top folder is the working directory of every CI step that runs in it, and a
Python started there without `-I` puts it first on its module path: a `secrets.py` committed
there is imported in place of the standard module by whatever imports `secrets` (the grader
did, and reported 13 points for the untouched template). The generated workflow now grades in
isolation, so this is the class run's second look: an old or edited workflow, a tool that runs
`python -m` in the checkout. It names each added top-level entry that Python would import
under a name the grader's interpreter already knows (a standard module, one of the installed
distributions' top-level packages, or a start-up hook), and nothing else: an honest helper
module (`helpers.py`, `plot_utils.py`) shadows nothing and is not named.
"""
from __future__ import annotations

import functools
import importlib.machinery
import os
import stat
import sys
from pathlib import Path

# Imported at start-up by `site` from anywhere on the path.
STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})
# CPython's own regression-test package: nothing that grades imports it, and `test.py` is a
# student's everyday scratch file.
NEVER_IMPORTED = frozenset({"test", "__main__"})
SOURCE_SUFFIXES = (".py", ".pyw", ".pyc")


@functools.lru_cache(maxsize=1)
def known_modules() -> frozenset[str]:
    """Top-level names this interpreter imports from its own libraries."""
    from importlib.metadata import packages_distributions

    names = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | STARTUP_HOOKS
    try:
        names |= set(packages_distributions())
    except Exception:  # noqa: BLE001 - a broken distribution's metadata: the rest still counts
        pass
    return frozenset(names - NEVER_IMPORTED)


def module_name(folder: Path, entry: str) -> str | None:
    """The name `import` would find `folder/entry` under, if any: a source, bytecode or
    extension module, or a package (a folder with `__init__`). Links count as what they
    name would import as; nothing is followed to find out."""
    try:
        mode = os.lstat(folder / entry).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        has_init = any(os.path.lexists(folder / entry / f"__init__{s}")
                       for s in SOURCE_SUFFIXES)
        return entry if has_init and entry.isidentifier() else None
    for suffix in SOURCE_SUFFIXES + tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".so",):
        if entry.endswith(suffix):
            stem = entry[:-len(suffix)]
            return stem if stem.isidentifier() else None
    if stat.S_ISLNK(mode) and entry.isidentifier():
        return entry   # a link to a folder would import as a package: not followed to see
    return None


def shadowing_entries(folder: Path, shipped_tops: set[str]) -> list[tuple[str, str]]:
    """(entry, module it shadows) for each top-level entry of `folder` that the bundle did
    not ship (`shipped_tops`: the top-level names of the shipped files) and that would be
    imported in place of a module the grader's interpreter knows."""
    known = known_modules()
    found = []
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    for entry in entries:
        if entry in shipped_tops:
            continue
        name = module_name(folder, entry)
        if name is not None and name in known:
            found.append((entry, name))
    return found
