"""Reading a student's file as it was at the due time, from their repository's git history.

The repository is the student's: its `.git/` folder (config, refs, objects) is hostile input.
Git is run read-only (`rev-list`, `ls-tree`, `cat-file`), never on the working tree, so the
student's files are not changed, and with every setting that could make git run a program or
reach the network overridden on the command line, which wins over the repository's config:
no fsmonitor, no hooks, no pager, no signature checks (gpg), no textconv or filters (plain
`cat-file blob`), no transport at all (a partial clone's "promisor" remote would otherwise be
fetched from, through any remote helper, when an object is missing), no replace refs, and no
system or global config. A `.git` that is a link or a file (`gitdir:` pointing elsewhere), and
repositories borrowing objects from elsewhere (`objects/info/alternates`, `commondir`), are not
read, and neither is a `.git` holding a symbolic link (or a pipe, socket or device)
anywhere: every entry is looked at first, nothing followed. Every value git prints is
validated (commit ids, commit times within the years 1 to 9999, the file listing) before it is
used, and a value out of range is that student's row, never an error of the class run. As on
disk (`student_files.read_student_file`), the file graded must be a regular file
(a blob of mode 100644/100755, not a link, 120000) no larger than the size limit, and no more
than that is read.

Commits are chosen by committer date: the author date survives `rebase`, `cherry-pick` and
`commit --amend`, so work done after the due date can carry an old author date; the committer
date is when the commit object was made. Both can be set by whoever makes the commit
(`GIT_COMMITTER_DATE`): the push time on the server is the only date a student cannot choose.
"""
from __future__ import annotations

import math
import os
import re
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath

from ..intake.student_files import SKIP_DIRS, SUFFIXES, not_regular_message, too_large_message

GIT_TIMEOUT = 30           # seconds per git command
MAX_COMMITS = 20_000       # commits looked at per repository
MAX_TREE_BYTES = 16 * 2**20

# Overrides of the repository's own config (command-line config wins over .git/config).
SAFE_CONFIG = {
    "core.fsmonitor": "false", "core.hooksPath": "/dev/null", "core.pager": "cat",
    "core.askPass": "", "core.sshCommand": "false", "core.gitProxy": "",
    "core.alternateRefsCommand": "", "core.untrackedCache": "false",
    "protocol.allow": "never", "protocol.ext.allow": "never", "protocol.file.allow": "never",
    "protocol.ssh.allow": "never", "protocol.http.allow": "never",
    "protocol.https.allow": "never", "protocol.git.allow": "never", "log.showSignature": "false", "gpg.program": "false",
    "gpg.ssh.program": "false", "gpg.x509.program": "false", "credential.helper": "",
    "diff.external": "", "uploadpack.packObjectsHook": "", "safe.directory": "*",
    "core.quotePath": "false",
}


class HistoryError(Exception):
    """The repository's history cannot be read: the message says why (for the row's note)."""


class NoFileInCommit(HistoryError):
    """The commit holds no file to grade (no student file, no notebook)."""


@dataclass
class DueVersion:
    """What the due date picks in one repository."""
    commit: str | None             # the commit graded (None: nothing at or before the due time)
    committed: str | None          # its committer date, ISO 8601 with its own offset
    later_commits: int             # commits after the due time
    latest_late_by: timedelta | None   # how late the latest commit is (None: none is late)
    latest: str | None = None      # the latest commit (graded when late work is accepted)
    latest_committed: str | None = None   # its committer date


def parse_due(text: str) -> datetime:
    """An ISO 8601 time with a zone (`2026-12-01T23:59:00+01:00`, or `...Z`)."""
    try:
        due = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--due {text!r} is not an ISO 8601 time, e.g. "
                         "2026-12-01T23:59:00+01:00") from None
    if due.tzinfo is None:
        raise ValueError(f"--due {text!r} has no time zone: add one, e.g. +01:00 or Z")
    return due


def is_repository(folder: Path) -> bool:
    """A folder with a `.git` folder of its own (a link or a `gitdir:` file is not followed)."""
    try:
        return stat.S_ISDIR(os.lstat(folder / ".git").st_mode)
    except OSError:
        return False


def foreign_git(folder: Path) -> str | None:
    """Why `folder`'s `.git` may belong to someone else, if it exists and is not a folder of
    its own: a link, or a file (`gitdir: <path>`, as worktrees and submodules write) that
    points elsewhere. None when there is no `.git` or it is a real folder."""
    try:
        mode = os.lstat(folder / ".git").st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return None
    if stat.S_ISLNK(mode):
        return "the repository's .git is a symbolic link; its history was not read " \
               "(links are not followed)"
    if stat.S_ISREG(mode):
        return "the repository's .git is a file pointing elsewhere (gitdir:); its history " \
               "was not read"
    return "the repository's .git is not a folder; its history was not read"


def _environment() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent",
           "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1",
           "GIT_PROTOCOL_FROM_USER": "0", "GIT_ALLOW_PROTOCOL": "none", "GIT_PAGER": "cat",
           "GIT_ATTR_NOSYSTEM": "1"}
    return env


def run_git(folder: Path, args: list[str], limit: int = MAX_TREE_BYTES, *,
         stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
    """Run a git command on `folder`'s repository; its output, capped at `limit`. Read-only
    unless the caller asks for a plumbing command that writes (`feedback_delivery`): `stdin`
    is given to git before its output is read, `env` adds to the scrubbed environment."""
    # Absolute: git runs inside the .git folder, where a relative path would not resolve.
    gitdir = Path(os.path.abspath(folder)) / ".git"
    cmd = ["git", "--no-pager", "--no-replace-objects", f"--git-dir={gitdir}"]
    for key, value in SAFE_CONFIG.items():
        cmd += ["-c", f"{key}={value}"]
    cmd += args
    with tempfile.TemporaryFile() as errfile:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL if stdin is None
                                    else subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=errfile, env={**_environment(), **(env or {})},
                                    cwd=gitdir, start_new_session=True)
        except OSError as e:
            raise HistoryError(f"git could not be started: {e.strerror}") from None
        # A timer ends git however long its answer takes (the read below waits for it).
        timer = threading.Timer(GIT_TIMEOUT, proc.kill)
        timer.start()
        try:
            if stdin is not None:
                try:   # small (a tree's entries): git reads it all before it answers
                    proc.stdin.write(stdin)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            out = proc.stdout.read(limit + 1)
            if len(out) > limit:
                proc.kill()
            proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        if len(out) > limit:
            raise HistoryError("git's answer is larger than expected; the repository was not "
                               "read")
        if proc.returncode == -9:   # only the timer kills it here
            raise HistoryError(f"git took more than {GIT_TIMEOUT} s")
        errfile.seek(0)
        err = errfile.read(4096)
    if proc.returncode != 0:
        first = err.decode("utf-8", "replace").strip().splitlines()[:1]
        why = re.sub(r"[\x00-\x1f\x7f]", " ", first[0])[:160] if first else "failed"
        raise HistoryError(f"git could not read the repository ({why})")
    return out


MAX_GIT_ENTRIES = 1_000_000   # files and folders under one .git (a big real one has ~100k)


def shown_git_path(rel: str) -> str:
    """A path inside the student's .git, printable on one line (its names are theirs)."""
    text = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", "?", text)
    return text if len(text) <= 120 else text[:117] + "..."


def check_layout(folder: Path) -> None:
    """Refuse a `.git` that is not entirely this student's: one that is not a folder of its
    own, one that borrows objects, and one holding a symbolic link (or a pipe, socket or
    device) anywhere: git follows links under `refs/`, `objects/xx/`, `packed-refs`, `logs/`,
    `HEAD` and `config` alike, so any of them could read another student's history as this
    one's. Every entry is looked at with lstat; nothing is followed."""
    why = foreign_git(folder)
    if why is not None:
        raise HistoryError(why)
    gitdir = folder / ".git"
    if not is_repository(folder):
        raise HistoryError("the folder has no .git folder")
    for name in ("commondir", "objects/info/alternates", "objects/info/http-alternates"):
        if os.path.lexists(gitdir / name):
            raise HistoryError(f"the repository's .git/{name} borrows objects from elsewhere; "
                               "its history was not read")
    seen = 0
    stack = [gitdir]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError as e:
            raise HistoryError(f"the repository's .git could not be listed "
                               f"({e.strerror})") from None
        for entry in entries:
            seen += 1
            if seen > MAX_GIT_ENTRIES:
                raise HistoryError(f"the repository's .git holds more than {MAX_GIT_ENTRIES} "
                                   "files; its history was not read")
            rel = os.path.relpath(entry.path, gitdir)
            if entry.is_symlink():
                raise HistoryError(f"the repository's .git/{shown_git_path(rel)} is a symbolic "
                                   "link; its history was not read (links are not followed)")
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False):
                raise HistoryError(f"the repository's .git/{shown_git_path(rel)} is not a regular "
                                   "file or folder; its history was not read")


# Commit times git may report that a datetime can hold (years 1 to 9999, UTC): anything else
# is a forged commit, refused rather than allowed to overflow the arithmetic on dates.
MIN_TIME, MAX_TIME = -62135596800, 253402300799
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _commit_time(text: str, sha: str) -> int:
    if not re.fullmatch(r"-?\d{1,15}", text):
        raise HistoryError(f"commit {sha[:10]} has no readable commit time")
    when = int(text)
    if not MIN_TIME <= when <= MAX_TIME:
        raise HistoryError(f"commit {sha[:10]} has a commit date out of range (not between "
                           "the years 1 and 9999): a forged commit")
    return when


def _commit_line(line: str) -> tuple[str, int, str]:
    """(sha, committer time, committer date in ISO 8601) of one `rev-list` line, validated."""
    parts = line.split(" ")
    if len(parts) != 3 or not _SHA.fullmatch(parts[0]):
        raise HistoryError("git gave an unexpected commit line; the history was not read")
    sha, when = parts[0], _commit_time(parts[1], parts[0])
    try:
        iso = datetime.fromisoformat(parts[2])
    except ValueError:
        raise HistoryError(f"commit {sha[:10]} has an unreadable commit date") from None
    if iso.tzinfo is None or abs(iso.timestamp() - when) > 1:
        raise HistoryError(f"commit {sha[:10]} has an inconsistent commit date")
    return sha, when, parts[2]


def due_version(folder: Path, due: datetime) -> DueVersion:
    """The last commit at or before `due` (committer date) reachable from HEAD, and what
    came after it."""
    check_layout(folder)
    out = run_git(folder, ["rev-list", f"--max-count={MAX_COMMITS}", "--format=%H %ct %cI",
                        "--no-commit-header", "HEAD"])
    deadline = due.timestamp()
    best: tuple[int, str, str] | None = None
    later, latest = 0, None
    for line in out.decode("ascii", "replace").splitlines():
        sha, when, iso = _commit_line(line)
        if when <= deadline:
            if best is None or when > best[0]:
                best = (when, sha, iso)
        else:
            later += 1
            if latest is None or when > latest[0]:
                latest = (when, sha, iso)
    if best is None and latest is None:
        raise HistoryError("the repository has no commits")
    late_by = timedelta(seconds=latest[0] - deadline) if latest else None
    newest = latest[1] if latest else best[1] if best else None
    return DueVersion(best[1] if best else None, best[2] if best else None, later, late_by,
                      newest, latest[2] if latest else None)


def head_commit_time(folder: Path) -> int:
    """HEAD's committer time (Unix seconds), read as safely as the due-date history."""
    check_layout(folder)
    out = run_git(folder, ["log", "-1", "--format=%ct", "HEAD"], limit=64)
    return _commit_time(out.decode("ascii", "replace").strip(), "HEAD")


def _rank(path: PurePosixPath, student_file: str) -> tuple:
    stem = Path(student_file).stem
    exact = path.name == student_file
    notebook = path.suffix == ".ipynb" and path.stem == stem
    return (0 if exact else 1 if notebook else 2, len(path.parts), str(path))


def read_at(folder: Path, commit: str, student_file: str, limit_py: int,
            limit_notebook: int) -> tuple[str, bytes]:
    """(path in the repository, content) of the student's file at `commit`, chosen as
    `student_files.pick_file` chooses on disk; HistoryError if there is none or it may not be
    read."""
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        raise HistoryError("not a commit id")
    listing = run_git(folder, ["ls-tree", "-r", "-z", "-l", "--full-tree", commit])
    found: list[tuple[PurePosixPath, str, str, str]] = []
    for entry in listing.split(b"\0"):
        if not entry or b"\t" not in entry:
            continue
        meta, raw_path = entry.split(b"\t", 1)
        fields = meta.decode("ascii", "replace").split()
        if len(fields) != 4:
            continue
        mode, kind, sha, size = fields
        if not _SHA.fullmatch(sha) or kind not in ("blob", "tree", "commit"):
            raise HistoryError("git gave an unexpected file listing; the history was not read")
        path = PurePosixPath(raw_path.decode("utf-8", "replace"))
        if not path.name.endswith(SUFFIXES) or path.name.startswith("."):
            continue
        if any(p in SKIP_DIRS or p.startswith(".") for p in path.parts[:-1]):
            continue
        found.append((path, mode, sha, size))
    if not found:
        raise NoFileInCommit(f"no {student_file} or notebook in commit {commit[:10]}")
    found.sort(key=lambda f: _rank(f[0], student_file))
    path, mode, sha, size = found[0]
    if mode == "120000":
        raise HistoryError(not_regular_message("a symbolic link"))
    if mode not in ("100644", "100755") or not size.isdigit():
        raise HistoryError(not_regular_message("not a regular file"))
    limit = limit_notebook if path.suffix == ".ipynb" else limit_py
    if int(size) > limit:
        raise HistoryError(too_large_message(limit))
    content = run_git(folder, ["cat-file", "blob", sha], limit=limit)
    return str(path), content


def days_late(late_by: timedelta) -> int:
    """Days late, a started day counting as one (1 minute late is 1 day)."""
    return max(0, math.ceil(late_by.total_seconds() / 86400))


def describe_late(late_by: timedelta) -> str:
    hours = late_by.total_seconds() / 3600
    if hours < 10:
        return f"{hours:.1f} h"
    return f"{hours:.0f} h" if hours < 48 else f"{hours / 24:.1f} days"


def utc(ts: datetime) -> str:
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
