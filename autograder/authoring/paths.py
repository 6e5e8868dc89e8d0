"""How authoring commands name the files of an assignment: relative to the current folder when
they are inside it, else relative to the assignment's project (the folder two levels above the
assignment's, where `assignment.toml`'s paths are resolved from), so that no message prints
where the project sits on the author's machine."""
from __future__ import annotations

import os
from pathlib import Path


def project_root_of(root: Path) -> Path:
    """The project an assignment folder belongs to: the folder two levels up, where
    `assignment.toml`'s paths are resolved from and the author runs the commands."""
    return Path(os.path.abspath(root)).parent.parent


def project_relative(path: Path, base: Path) -> str:
    """`path` as the author sees it: relative to the current folder when inside it, else as
    seen from the project root `base` (never absolute: `../` where it lies outside)."""
    absolute = os.path.abspath(path)
    here = os.getcwd()
    if os.path.commonpath([absolute, here]) == here:
        return Path(os.path.relpath(absolute, here)).as_posix()
    return Path(os.path.relpath(absolute, os.path.abspath(base))).as_posix()


def shown_assignment(root: Path) -> str:
    """How lint names an assignment folder (`assignments/NAME` from the project's root)."""
    return project_relative(root, project_root_of(root))
