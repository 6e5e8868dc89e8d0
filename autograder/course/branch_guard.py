"""Whether writing one branch of a student's repository changes that branch and nothing else.

`--deliver` moves exactly one ref, `refs/heads/<branch>`, with `git update-ref --no-deref`. The
repository is the student's, so before anything is written it is refused (the reason goes in
the output) when that write could land elsewhere or change what another name means:

* the branch itself is a symbolic ref (`ref: refs/heads/main`: git would follow it and move
  `main`), a folder (refs named `feedback/...`), or not a regular file;
* any symbolic ref reaches the branch, directly or through others: `HEAD` (the branch is checked
  out, perhaps as `main` made a symbolic ref to it, and moving it would leave the index
  and working tree behind), the `HEAD` of a linked worktree (`.git/worktrees/*/HEAD`), a branch
  or tag under `refs/`, a pseudo-ref such as `ORIG_HEAD`. A symbolic ref to a branch that does
  not exist yet counts too: creating the branch would give it a value;
* the branch's reflog, which git appends to in place, is not a regular file of its own (a hard
  link would be written through; a folder would make git fail or remove it);
* the refs are kept in a reftable, which these checks do not read.

Symbolic refs live only as files (loose refs and pseudo-refs): `packed-refs` holds none, so
reading every file under `refs/` and the pseudo-refs at the top of `.git` and of each
worktree's folder finds them all. Names are compared without regard to case, as a
case-insensitive file system (macOS) resolves them. The `.git` folder has been checked
first (`git_history._check_layout`): no link, pipe or device anywhere in it, no borrowed objects,
not a `gitdir:` file.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .git_history import HistoryError, shown_git_path

MAX_DEPTH = 10             # symbolic refs followed in a chain (git itself stops at 5)
_PSEUDO_REF = re.compile(r"[A-Z][A-Z0-9_]*")    # HEAD, ORIG_HEAD, FETCH_HEAD, ...
_READ = 512                # a ref file is one line; a symbolic ref names another ref


def _symbolic_target(path: Path) -> str | None:
    """The ref a symbolic ref file names (`ref: refs/heads/main`), None for any other file."""
    try:
        with open(path, "rb") as f:
            head = f.read(_READ)
    except OSError:
        return None
    if not head.startswith(b"ref:"):
        return None
    # The first line, as git reads it (anything after it would make git refuse the ref; taken
    # as the target all the same, the check errs on the side of refusing).
    return head[4:].decode("utf-8", "replace").strip().split("\n", 1)[0].strip()


def _symbolic_refs(gitdir: Path) -> dict[str, str]:
    """{name: the ref it names} for every symbolic ref of the repository and its worktrees.
    A worktree's own refs are named `worktrees/<name>/<ref>`."""
    found: dict[str, str] = {}

    def scan(top: Path, prefix: str) -> None:
        try:
            tops = list(os.scandir(top))
        except OSError:
            return
        for entry in tops:
            if entry.is_file(follow_symlinks=False) and _PSEUDO_REF.fullmatch(entry.name):
                target = _symbolic_target(Path(entry.path))
                if target is not None:
                    found[prefix + entry.name] = target
        for dirpath, _dirs, files in os.walk(top / "refs"):
            for name in files:
                path = Path(dirpath) / name
                target = _symbolic_target(path)
                if target is not None:
                    found[prefix + path.relative_to(top).as_posix()] = target

    scan(gitdir, "")
    worktrees = gitdir / "worktrees"
    if worktrees.is_dir():
        for entry in os.scandir(worktrees):
            if entry.is_dir(follow_symlinks=False):
                scan(Path(entry.path), f"worktrees/{entry.name}/")
    return found


def _chain(name: str, refs: dict[str, str], branch_ref: str) -> list[str] | None:
    """The refs the symbolic ref `name` goes through to reach `branch_ref` (empty when it
    names it directly), None when it does not lead there within MAX_DEPTH steps. A
    worktree's ref is looked up among its own refs first, then the shared ones."""
    prefix = name[:name.index("/", len("worktrees/")) + 1] if name.startswith("worktrees/") \
        else ""
    folded = {k.casefold(): v for k, v in refs.items()}
    target, through = refs[name], []
    for _ in range(MAX_DEPTH):
        if target.casefold() == branch_ref.casefold():
            return through
        nxt = folded.get((prefix + target).casefold(), folded.get(target.casefold()))
        if nxt is None:
            return None
        through.append(target)
        target = nxt
    return through    # a longer chain (or a loop) is not followed: refused to be safe


def _why(name: str, through: list[str], branch: str) -> str:
    via = f" (through `{shown_git_path(through[0])}`, a symbolic ref to it)" if through else ""
    if name == "HEAD":
        return (f"the checked-out branch is `{branch}`{via}; writing it would leave the "
                "student's index and working tree behind")
    if name.startswith("worktrees/") and name.endswith("/HEAD") and name.count("/") == 2:
        return (f"the branch `{branch}` is checked out in the linked worktree "
                f"`{shown_git_path(name.split('/')[1])}`{via}; writing it would leave that "
                "worktree behind")
    return (f"`{shown_git_path(name)}` is a symbolic ref leading to the branch `{branch}`; writing "
            "the branch would move it too")


def check_branch_write(folder: Path, branch: str) -> None:
    """Raise HistoryError, saying why, when writing `refs/heads/<branch>` of the repository
    in `folder` could change anything but that branch (see the module's note)."""
    gitdir = folder / ".git"
    branch_ref = f"refs/heads/{branch}"
    if os.path.lexists(gitdir / "reftable"):
        raise HistoryError("the repository keeps its refs in a reftable, whose symbolic "
                           "refs are not checked here")
    try:
        mode = os.lstat(gitdir / branch_ref).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:
        raise HistoryError(f"{branch_ref} could not be read ({e.strerror})") from None
    if mode is not None:
        if stat.S_ISDIR(mode):
            raise HistoryError(f"{branch_ref} is a folder (refs named `{branch}/...`), "
                               "not a branch")
        if not stat.S_ISREG(mode):
            raise HistoryError(f"{branch_ref} is not a regular file")
        target = _symbolic_target(gitdir / branch_ref)
        if target is not None:
            raise HistoryError(f"the branch `{branch}` is a symbolic ref to "
                               f"`{shown_git_path(target)}`; writing it would move that ref "
                               "instead")
    refs = _symbolic_refs(gitdir)
    for name in sorted(refs, key=lambda n: (n != "HEAD", n)):
        through = _chain(name, refs, branch_ref)
        if through is not None:
            raise HistoryError(_why(name, through, branch))
    log = gitdir / "logs" / branch_ref
    try:
        st = os.lstat(log)
    except FileNotFoundError:
        return
    except OSError as e:
        raise HistoryError(f"the branch's reflog could not be read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise HistoryError(f"the branch's reflog (logs/{branch_ref}) is not a regular "
                           "file")
    if st.st_nlink != 1:
        raise HistoryError(f"the branch's reflog (logs/{branch_ref}) is a hard link: git "
                           "would append to the other file too")
