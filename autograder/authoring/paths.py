"""How authoring commands name the files of an assignment: relative to its project (the folder
two levels above the assignment's, where `assignment.toml`'s paths are resolved from and the
author runs the commands), so that no message prints where the project sits on the author's
machine."""
from __future__ import annotations

import os
from pathlib import Path


def project_root_of(root: Path) -> Path:
    """The project an assignment folder belongs to: the folder two levels up, where
    `assignment.toml`'s paths are resolved from and the author runs the commands."""
    return Path(os.path.abspath(root)).parent.parent


def project_relative(path: Path, base: Path) -> str:
    """`path` as seen from the project root `base` (never absolute: `../` where it lies
    outside)."""
    return Path(os.path.relpath(os.path.abspath(path), os.path.abspath(base))).as_posix()


def shown_assignment(root: Path) -> str:
    """How lint names an assignment folder: relative to its project (`assignments/NAME`)."""
    return project_relative(root, project_root_of(root))
