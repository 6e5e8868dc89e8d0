"""Writing the grader's outputs where a student has a say, without following their links.

Classroom 50 reads `result.json` and `release-body.md` from the student's checkout, so the
grader writes them there; a student can commit either as a symbolic link (to the runner's
files, to the bundle, anywhere the runner's user may write), and an ordinary `open(..., "w")`
would write through it. `replace_file` never opens the name itself: the bytes go to a new
file made exclusively in the same folder (no link can stand in its place), which is then
renamed over the name, replacing whatever is there (a link, not its target; a folder of that
name is removed first: the checkout is the runner's own copy).

`append_line_file` is for files a platform hands the grader by path (GitHub Actions'
`$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY`, which the runner makes in its own temporary
folder and reads afterwards): they must be appended to, not replaced, and are opened without
following a link in their place.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path


def replace_file(folder: Path, name: str, data: bytes) -> Path:
    """`folder/name` holding `data`, whatever `name` was before (a link is replaced, never
    followed). `name` is a plain file name."""
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a plain file name: {name!r}")
    target = Path(folder) / name
    try:
        if stat.S_ISDIR(os.lstat(target).st_mode):
            shutil.rmtree(target)      # removes the folder's entries, following no link
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)           # mkstemp makes 0600; the platform may read as another user
        os.replace(tmp, target)        # a rename replaces the name, link or not
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return target


def append_line_file(path: Path, text: str) -> None:
    """Append `text` to the platform's file at `path`, refusing a link in its place."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(text)
