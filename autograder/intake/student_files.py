"""What a student file is, where it is found, and reading it without trusting it.

A submission is a regular file, opened without following symbolic links: a student's folder or
repository can carry `attention.py -> ../../reference/attention.py` (`git clone` recreates
links), a FIFO that would block the grader, a link to `/dev/zero`, or a sparse file of a GiB.
`read_student_file` refuses all of those, and never reads more than the size limit plus one
byte. Its messages never quote the file's contents.

`pick_file` is the one place that chooses which file of a folder to grade (class folders,
Gradescope's submission folder); the callers differ only by the `ambiguous` policy.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SUFFIXES = (".py", ".ipynb")
# Folders that never hold a student's answer (tooling, the shipped tests, environments).
SKIP_DIRS = frozenset({".git", "__pycache__", ".github", ".ipynb_checkpoints", "tests",
                       "node_modules", ".venv", "venv"})


class UnreadableSubmission(Exception):
    """A submission whose source cannot be read: the message says why, for its row. `text`:
    the file as text all the same, where it is one that Python refuses (not UTF-8), so that
    its written answers are still read."""

    def __init__(self, message: str, text: str | None = None):
        super().__init__(message)
        self.text = text


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular_message(kind: str) -> str:
    return (f"the submitted file is {kind}, not a regular file; submit the file itself "
            "(links are not followed)")


def read_student_file(path: Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; UnreadableSubmission otherwise.

    O_NOFOLLOW refuses a link as the last component, O_NONBLOCK keeps a FIFO from blocking the
    open, fstat on the open descriptor (not the path: no race) refuses anything but a regular
    file, and the read stops at `limit + 1` bytes whatever the size claims.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise UnreadableSubmission(f"file not found: {_shown(path)}") from None
    except OSError as e:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode) or e.errno == getattr(os, "ELOOP", -1):
            raise UnreadableSubmission(not_regular_message("a symbolic link")) from None
        if mode and not stat.S_ISREG(mode):   # a socket cannot even be opened
            raise UnreadableSubmission(not_regular_message(_kind(mode))) from None
        raise UnreadableSubmission(f"cannot read the file: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableSubmission(not_regular_message(_kind(st.st_mode)))
        if st.st_size > limit:
            raise UnreadableSubmission(too_large_message(limit))
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise UnreadableSubmission(f"cannot read the file: {e.strerror}") from None
    finally:
        os.close(fd)
    raw = b"".join(chunks)
    if len(raw) > limit:   # it grew after fstat
        raise UnreadableSubmission(too_large_message(limit))
    return raw


def too_large_message(limit: int) -> str:
    return f"the file is larger than {limit // 2**20} MB"


def _shown(path: Path) -> str:
    return os.fsencode(str(path)).decode("utf-8", "replace")


def is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def candidates(folder: Path) -> list[Path]:
    """Files with a submission suffix under `folder`, links included (they are refused when
    read, with a message), without entering linked, hidden or tooling folders."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):   # never follows folder links
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")
                             and not is_link(Path(dirpath) / d))
        for f in sorted(filenames):
            if f.endswith(SUFFIXES) and not f.startswith("."):
                found.append(Path(dirpath) / f)
    return found


@dataclass
class Pick:
    file: Path | None                 # the file to grade; None when there is none to pick
    others: list[Path] = field(default_factory=list)   # found but not graded
    ambiguous: bool = False           # several files, none with the expected name (refused)


def pick_file(folder: Path, student_file: str, *,
              ambiguous: Literal["closest", "refuse"] = "closest") -> Pick:
    """The file to grade in `folder`: `student_file`, else the notebook of the same stem (the
    shallowest such file first), else the only candidate. With several candidates and none of
    the expected names, `ambiguous="closest"` picks the shallowest (then by name), while
    `"refuse"` picks none (the student is asked to rename)."""
    files = candidates(folder)
    stem = Path(student_file).stem

    def rank(p: Path) -> tuple:
        exact = p.name == student_file
        notebook = p.suffix == ".ipynb" and p.stem == stem
        return (0 if exact else 1 if notebook else 2, len(p.relative_to(folder).parts), str(p))

    files.sort(key=rank)
    if not files:
        return Pick(None)
    if len(files) > 1 and rank(files[0])[0] == 2 and ambiguous == "refuse":
        return Pick(None, files, ambiguous=True)
    return Pick(files[0], files[1:])
