"""How authoring commands name the files of an assignment: relative to the current folder when
the author works inside the project and the file is there, else relative to the assignment's
project (the folder two levels above the assignment's, where `assignment.toml`'s paths are
resolved from), so that no message prints where the project sits on the author's machine."""
from __future__ import annotations

import os
from pathlib import Path


def project_root_of(root: Path) -> Path:
    """The project an assignment folder belongs to: the folder two levels up, where
    `assignment.toml`'s paths are resolved from and the author runs the commands."""
    return Path(os.path.abspath(root)).parent.parent


def project_relative(path: Path, base: Path) -> str:
    """`path` as the author sees it: relative to the current folder when that is in the
    project `base` and holds the path, else as seen from `base` (never absolute: `../` where
    it lies outside)."""
    absolute, base, here = os.path.abspath(path), os.path.abspath(base), os.getcwd()
    if os.path.commonpath([here, base]) == base and os.path.commonpath([absolute, here]) == here:
        return Path(os.path.relpath(absolute, here)).as_posix()
    return Path(os.path.relpath(absolute, base)).as_posix()


def shown_assignment(root: Path) -> str:
    """How lint names an assignment folder (`assignments/NAME` from the project's root)."""
    return project_relative(root, project_root_of(root))
