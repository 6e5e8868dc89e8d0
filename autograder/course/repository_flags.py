"""Whether a cloned student repository still carries what was shipped to it: the workflow,
the engine and the assignment's data unchanged, and nothing added in the folders shipped whole.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable

from ..intake.student_files import UnreadableSubmission, is_link, read_student_file
from .import_shadows import shadowing_entries


MAX_FLAGS = 12   # per repository: enough to see what was done, not a list of thousands


def repository_flags(folder: Path, originals: dict[str, bytes]) -> list[str]:
    """What a student changed among the files shipped to them (`originals`, by path in the
    repository): a file that differs, is missing or is not a regular file, any file added
    in a folder the bundle ships whole (the workflows, the engine, the assignment's data), and
    any module or package added at the top that could shadow an import (`import_shadows`).
    Nothing is read through a link, and no file is read beyond its original's size."""
    flags = []
    for rel, content in sorted(originals.items()):
        try:
            mode = os.lstat(folder / rel).st_mode
        except OSError:
            flags.append(f"{rel} is missing")
            continue
        if not stat.S_ISREG(mode):
            flags.append(f"{rel} is not a regular file (a link?)")
            continue
        try:
            same = read_student_file(folder / rel, len(content)) == content
        except UnreadableSubmission:   # larger than the original, or replaced meanwhile
            same = False
        if not same:
            flags.append(f"{rel} differs from the original")
    for rel in sorted(added_files(folder, originals)):
        flags.append(f"{rel} was added")
    shipped_tops = {rel.split("/", 1)[0] for rel in originals}
    for entry, module in shadowing_entries(folder, shipped_tops):
        flags.append(f"{entry} was added at the top and could shadow the module `{module}` "
                     "(Python run in the repository would import it instead)")
    if len(flags) > MAX_FLAGS:
        flags = flags[:MAX_FLAGS - 1] + [f"... and {len(flags) - MAX_FLAGS + 1} more"]
    return flags


def added_files(folder: Path, originals: dict[str, bytes]) -> list[str]:
    """Entries (files, links, anything but folders) under the shipped folders that the
    bundle did not ship; caches (__pycache__, .pyc) aside. Links to folders are not entered."""
    # The workflows' folder (the shipped workflow's own), and every other top folder shipped.
    watched = {rel.rsplit("/", 1)[0] if rel.startswith(".github/") else rel.split("/", 1)[0]
               for rel in originals if "/" in rel}
    added = []
    for top in sorted(watched):
        start = folder / top
        if is_link(start):
            added.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(start):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            links = [d for d in dirnames if is_link(Path(dirpath) / d)]
            for name in filenames + links:
                rel = (Path(dirpath) / name).relative_to(folder).as_posix()
                if rel not in originals and not name.endswith((".pyc", ".pyo")):
                    added.append(rel)
    return added


def class_repository_flags(graded: list, shipped: Callable[[], dict[str, bytes]] | None
                           ) -> list[dict]:
    """{"student", "why"} for each change to the shipped files in the class's student
    repositories (Classroom layout: a student folder holding the bundle's `.github/` or
    `autograder/`); `shipped()` gives the bundle's files, asked for only when some folder is
    such a repository."""
    folders = [g.student.folder for g in graded]
    if shipped is None or not any(f is not None and is_repository(f) for f in folders):
        return []
    originals = shipped()
    flags = []
    for g in graded:
        folder = g.student.folder
        if folder is None or not is_repository(folder):
            continue
        for why in repository_flags(folder, originals):
            flags.append({"student": g.student.name, "why": why})
    return flags


def is_repository(folder: Path) -> bool:
    """A student's copy of the bundle (what Classroom clones): it holds the bundle's folders."""
    return any(os.path.lexists(folder / name) for name in (".github", "autograder"))
