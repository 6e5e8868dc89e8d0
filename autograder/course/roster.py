"""A class roster, and joining it with the students found in the submission folders.

Two roster formats are read:

* a CSV with `identifier` and `github_username` columns (GitHub Classroom's roster export and
  the tools that replaced it; a `name` column is kept when present, other columns are ignored);
* a Gradescope export's own `submission_metadata.yml` (or the export folder holding it): each
  submitter's `:sid` (else `:email`) is the identifier, and the `submission_<id>` folder is the
  student's.

Classroom clone folders are named `<assignment>-<username>` (or just `<username>`): a folder is
matched to the roster entry whose GitHub username ends its name, compared without regard to
case; the longest such username wins, so `hw-ann` is Ann's, not N's. Every cell of the roster is
kept as text and written to CSV through `safetext.csv_cell` by the caller.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from .classlist import Student, display

MAX_ROSTER_BYTES = 8 * 2**20
MAX_ROWS = 100_000


class RosterError(ValueError):
    """A roster that cannot be read: the message says which file and what to fix."""


@dataclass
class Member:
    identifier: str
    github_username: str = ""
    name: str = ""
    submissions: list[str] = field(default_factory=list)   # Gradescope submission folders


@dataclass
class Joined:
    """The class as the roster sees it, in roster order, then what the roster does not know."""
    rows: list[tuple[Member | None, Student]]
    unmatched: list[Student]             # folders/files that matched no one (also in rows)
    missing: list[Member]                # roster members with no submission (also in rows)


def load_roster(path: Path) -> list[Member]:
    """The roster in `path` (a CSV, a `submission_metadata.yml`, or a Gradescope export)."""
    if path.is_dir() and (path / "submission_metadata.yml").is_file():
        path = path / "submission_metadata.yml"
    try:
        raw = path.read_bytes()[:MAX_ROSTER_BYTES + 1]
    except OSError as e:
        raise RosterError(f"roster {path}: {e.strerror}") from None
    if len(raw) > MAX_ROSTER_BYTES:
        raise RosterError(f"roster {path} is larger than {MAX_ROSTER_BYTES // 2**20} MB")
    text = raw.decode("utf-8-sig", "replace")
    if path.suffix in (".yml", ".yaml"):
        return _gradescope_roster(path, text)
    return _csv_roster(path, text)


def _csv_roster(path: Path, text: str) -> list[Member]:
    reader = csv.DictReader(io.StringIO(text))
    columns = {(c or "").strip().lower(): c for c in reader.fieldnames or []}
    if "identifier" not in columns or "github_username" not in columns:
        raise RosterError(f"roster {path}: the first line must name the columns `identifier` "
                          "and `github_username` (found: "
                          f"{', '.join(repr(c) for c in columns) or 'none'})")
    members: list[Member] = []
    for n, row in enumerate(reader, 2):
        if n > MAX_ROWS:
            raise RosterError(f"roster {path} has more than {MAX_ROWS} rows")
        ident = (row.get(columns["identifier"]) or "").strip()
        user = (row.get(columns["github_username"]) or "").strip()
        name = (row.get(columns["name"]) or "").strip() if "name" in columns else ""
        if not ident and not user:
            continue   # a blank line
        members.append(Member(ident or user, user.lstrip("@"), name))
    return members


def _gradescope_roster(path: Path, text: str) -> list[Member]:
    import yaml

    try:
        meta = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        raise RosterError(f"roster {path} is not valid YAML: {str(e)[:200]}") from None
    if not isinstance(meta, dict):
        raise RosterError(f"roster {path}: expected Gradescope's mapping of submission folders")
    members: dict[str, Member] = {}
    for key, info in meta.items():
        submitters = (info or {}).get(":submitters") or (info or {}).get("submitters") or [] \
            if isinstance(info, dict) else []
        for s in submitters if isinstance(submitters, list) else []:
            if not isinstance(s, dict):
                continue
            ident = str(s.get(":sid") or s.get("sid") or s.get(":email") or s.get("email") or "")
            if not ident:
                continue
            m = members.setdefault(ident, Member(ident, name=str(s.get(":name") or
                                                                  s.get("name") or "")))
            m.submissions.append(str(key))
    return list(members.values())


def _folder_name(s: Student) -> str:
    if s.folder is not None:
        return display(s.folder.name)
    if s.file is not None:
        return display(s.file.stem)
    return s.name


def _match(name: str, by_user: dict[str, Member]) -> Member | None:
    low = name.lower()
    best = None
    for user, m in by_user.items():
        if low == user or (low.endswith(user) and low[-len(user) - 1] in "-_"):
            if best is None or len(user) > len(best.github_username):
                best = m
    return best


def join(members: list[Member], students: list[Student]) -> Joined:
    """Pair each roster member with their submission: a row per member (a "missing" one when
    there is none) and a row per submission that matched no one."""
    by_user = {m.github_username.lower(): m for m in members if m.github_username}
    by_folder = {sub: m for m in members for sub in m.submissions}
    found: dict[int, Student] = {}
    unmatched: list[Student] = []
    for s in students:
        folder = _folder_name(s)
        m = by_folder.get(folder) or _match(folder, by_user)
        if m is None or id(m) in found:
            if m is not None:
                s.notes.append(f"note: another submission of {m.identifier} was also found; "
                               "this one was not matched to the roster")
            unmatched.append(s)
            continue
        found[id(m)] = s
    rows: list[tuple[Member | None, Student]] = []
    missing = []
    for m in members:
        s = found.get(id(m))
        if s is None:
            missing.append(m)
            who = f" (GitHub user {m.github_username})" if m.github_username else ""
            s = Student(m.name or m.github_username or m.identifier, None, None,
                        problem=f"missing: no submission found for {m.identifier}{who}")
        rows.append((m, s))
    rows += [(None, s) for s in unmatched]
    return Joined(rows, unmatched, missing)


def safe_identifier(text: str) -> str:
    """An identifier shown on one line (roster cells are the instructor's, but may be pasted
    from anywhere)."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text).strip()
