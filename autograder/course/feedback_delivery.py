"""Feedback that reaches students, with nothing sent from here (`grade --out R --deliver`).

Three things are written, ready for the instructor's own push, `gh` or mail tool:

* in each cloned repository, a commit on a branch `feedback` holding the student's feedback
  as `FEEDBACK.md`, made with git's plumbing (`hash-object`, `mktree`, `commit-tree`,
  `update-ref`): the index, the working tree and the checked-out branch are not touched, and
  no file of the working tree is read, so a link the student committed leads nowhere. The
  branch starts at the commit that was graded (else HEAD; a repository without commits gets a
  first commit of its own); a branch `feedback` already there gains a commit on top, never a
  rewrite, and an unchanged feedback adds nothing. The repository is read as the due-date
  history is (`git_history`): every setting that could run a program is overridden, and a
  `.git` holding a link, borrowing objects or pointing elsewhere is refused. Only that branch
  is written: a repository where the write could move anything else (the branch checked out,
  here or in a linked worktree, a symbolic ref to or from it, a reflog that is a hard link)
  is left alone, with the reason (`branch_guard`);
* `R/feedback-pr/<name>.md`: the body of a comment for each student's Classroom 50 Feedback
  pull request (`gh pr comment --body-file`), cut to fit GitHub's 65,536 characters;
* with a roster that has an `email` column, `R/mail-merge.csv`: `email,subject,body_file`, the
  body file being the student's feedback (`feedback/<name>.md`, relative to R).
"""
from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

from . import branch_guard, git_history
from ..model.safetext import csv_cell

BRANCH = "feedback"
FILE_NAME = "FEEDBACK.md"
MAX_COMMENT = 65_536          # GitHub's limit on a comment's body
IDENTITY = {"GIT_AUTHOR_NAME": "autograder", "GIT_AUTHOR_EMAIL": "autograder@localhost",
            "GIT_COMMITTER_NAME": "autograder", "GIT_COMMITTER_EMAIL": "autograder@localhost"}
_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_EMAIL = re.compile(r"[^@\s,;<>\"']+@[^@\s,;<>\"']+\.[^@\s,;<>\"']+")


@dataclass
class Delivered:
    student: str
    status: str               # "committed", "unchanged" or "skipped"
    detail: str = ""


def _oid(raw: bytes, what: str) -> str:
    text = raw.decode("ascii", "replace").strip()
    if not _OID.fullmatch(text):
        raise git_history.HistoryError(f"git gave no object id for {what}")
    return text


def _branch_tip(folder: Path, branch: str) -> str | None:
    """The branch's commit, None when there is no such branch. (`for-each-ref` also lists
    refs under `refs/heads/<branch>/`: only the exact name counts.)"""
    out = git_history.run_git(folder, ["for-each-ref", "--format=%(objectname) %(refname)",
                                    f"refs/heads/{branch}"])
    for line in out.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition(" ")
        if name == f"refs/heads/{branch}":
            return _oid(oid.encode(), branch)
    return None


def _head_commit(folder: Path) -> str | None:
    try:
        return _oid(git_history.run_git(folder, ["rev-parse", "--verify", "-q", "HEAD^{commit}"],
                                     limit=256), "HEAD")
    except git_history.HistoryError:
        return None   # no commit yet


def _tree_with_file(folder: Path, base_tree: str | None, blob: str) -> str:
    """A tree like `base_tree` (or empty) whose top-level FEEDBACK.md is `blob`."""
    entries = b""
    if base_tree is not None:
        listing = git_history.run_git(folder, ["ls-tree", "-z", base_tree])
        for entry in listing.split(b"\0"):
            if entry and entry.split(b"\t", 1)[-1] != FILE_NAME.encode():
                entries += entry + b"\0"
    entries += f"100644 blob {blob}\t{FILE_NAME}".encode() + b"\0"
    return _oid(git_history.run_git(folder, ["mktree", "-z"], limit=256, stdin=entries), "tree")


def commit_feedback(folder: Path, text: str, message: str, base: str | None = None,
                    branch: str = BRANCH) -> tuple[str, str]:
    """Add `text` as FEEDBACK.md in a commit on `branch` of the repository in `folder`;
    ("committed", sha) or ("unchanged", sha). Raises HistoryError when the repository may not
    or cannot be written."""
    git_history.check_layout(folder)
    branch_guard.check_branch_write(folder, branch)
    import tempfile

    with tempfile.NamedTemporaryFile("wb", suffix=".md") as f:
        f.write(text.encode("utf-8"))
        f.flush()
        blob = _oid(git_history.run_git(folder, ["hash-object", "-w", "--no-filters", f.name],
                                     limit=256), "the feedback file")
    tip = _branch_tip(folder, branch)
    parent = tip or (base if base and _OID.fullmatch(base) else None) or _head_commit(folder)
    base_tree = None
    if parent is not None:
        base_tree = _oid(git_history.run_git(folder, ["rev-parse", "--verify", "-q",
                                                   f"{parent}^{{tree}}"], limit=256), "a tree")
    tree = _tree_with_file(folder, base_tree, blob)
    if tip is not None and tree == base_tree:
        return "unchanged", tip
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    commit = _oid(git_history.run_git(folder, args, limit=256, env=IDENTITY), "the commit")
    # The old value guards the update: a branch moved meanwhile is not overwritten; and the
    # ref itself is written, never a ref it might have become a symbolic ref to meanwhile.
    git_history.run_git(folder, ["update-ref", "--no-deref", "-m", "autograder feedback",
                              f"refs/heads/{branch}", commit, tip or ""], limit=256,
                     env=IDENTITY)
    return "committed", commit


def comment_body(feedback_md: str, title: str) -> str:
    """The Feedback pull request comment: the feedback file, cut to GitHub's limit."""
    note = "\n\n_(cut here: the whole feedback is in FEEDBACK.md on the `feedback` branch)_\n"
    body = feedback_md
    if len(body) > MAX_COMMENT:
        body = body[:MAX_COMMENT - len(note)] + note
    return body


def mail_merge_rows(rows: list[tuple[str, str, str]]) -> str:
    """`mail-merge.csv`: (email, subject, body file) per student, cells made safe."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["email", "subject", "body_file"])
    for email, subject, body in rows:
        writer.writerow([csv_cell(email), csv_cell(subject), csv_cell(body)])
    return buf.getvalue()


def deliver(out: Path, title: str, graded, feedback_files: list[Path], members: dict,
            bases: dict[int, str], label=lambda s: s.name) -> dict:
    """Write what `--deliver` promises (see the module's note) for each graded row;
    `feedback_files`: each row's feedback Markdown, `members`: {id(student): roster member},
    `bases`: {id(student): graded commit}, `label` names a student. Returns {"commits": [Delivered], "comments": folder,
    "mail": path or None, "no_email": [names]}."""
    comments = out / "feedback-pr"
    comments.mkdir(parents=True, exist_ok=True)
    delivered: list[Delivered] = []
    mail: list[tuple[str, str, str]] = []
    no_email: list[str] = []
    has_emails = any(getattr(m, "email", "") for m in members.values())
    for g, md_path in zip(graded, feedback_files):
        s, r = g.student, g.result
        text = md_path.read_text(encoding="utf-8")
        stem = md_path.stem
        (comments / f"{stem}.md").write_text(comment_body(text, title), encoding="utf-8")
        member = members.get(id(s))
        if has_emails:
            email = (getattr(member, "email", "") or "").strip() if member else ""
            if _EMAIL.fullmatch(email):
                mail.append((email, f"{title}: your feedback",
                             md_path.relative_to(out).as_posix()))
            else:
                no_email.append(label(s))
        if s.folder is None or r.missing or not git_history.is_repository(s.folder):
            continue
        message = f"Feedback: {title}\n\nWritten by `autograder grade --deliver`."
        try:
            status, sha = commit_feedback(s.folder, text, message, bases.get(id(s)))
            delivered.append(Delivered(label(s), status, sha[:10]))
        except (git_history.HistoryError, OSError, ValueError) as e:
            delivered.append(Delivered(label(s), "skipped", str(e)))
    mail_path = None
    if has_emails:
        mail_path = out / "mail-merge.csv"
        tmp = mail_path.with_name(mail_path.name + ".tmp")
        tmp.write_text(mail_merge_rows(mail), encoding="utf-8")
        os.replace(tmp, mail_path)
    return {"commits": delivered, "comments": comments, "mail": mail_path,
            "no_email": no_email}
