"""A class roster, and joining it with the students found in the submission folders.

Two roster formats are read:

* a CSV with `identifier` and `github_username` columns (GitHub Classroom's roster export and
  the tools that replaced it; `name` and `email` columns are kept when present, other columns
  are ignored);
* a Gradescope export's own `submission_metadata.yml` (or the export folder holding it): each
  submitter's `:sid` (else `:email`) is the identifier, and the `submission_<id>` folder is the
  student's.

Classroom clone folders (GitHub Classroom's, Classroom 50's) are named `<prefix>-<username>`,
the prefix being the assignment's and the same for the whole class, or just `<username>`. A
folder belongs to a roster student only by that exact name, compared without regard to case:
the class's prefix is the one most of its folders carry (see `class_prefix`), so an outsider's `attention-a-alice` is not Alice's `attention-alice`, and no
folder is matched by a suffix of its name. Two submissions that claim one student are both
reported and neither is chosen: the student's row says so (status "ambiguous", no points sent
to the LMS) and each claimant is graded on a row of its own, without the identifier. Every cell
of the roster is kept as text and written to CSV through `safetext.csv_cell` by the caller.
"""
from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Iterable
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
    email: str = ""            # for the mail-merge file of `grade --deliver`


@dataclass
class Joined:
    """The class as the roster sees it, in roster order, then what the roster does not know."""
    rows: list[tuple[Member | None, Student]]
    unmatched: list[Student]             # folders/files that matched no one (also in rows)
    missing: list[Member]                # roster members with no submission (also in rows)
    contested: list[tuple[Member, list[Student]]] = field(default_factory=list)
    # ^ members claimed by several submissions, with the claimants (all in rows, unmatched)


AMBIGUOUS = "ambiguous"


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
        email = (row.get(columns["email"]) or "").strip() if "email" in columns else ""
        if not ident and not user:
            continue   # a blank line
        members.append(Member(ident or user, user.lstrip("@"), name, email=email))
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
                                                                  s.get("name") or ""),
                                                  email=str(s.get(":email") or
                                                            s.get("email") or "")))
            m.submissions.append(str(key))
    return list(members.values())


def _folder_name(s: Student) -> str:
    if s.folder is not None:
        return display(s.folder.name)
    if s.file is not None:
        return display(s.file.stem)
    return s.name


SEPARATOR = "-"   # GitHub Classroom and Classroom 50 name clones `<assignment>-<username>`


def class_prefix(names: Iterable[str]) -> str | None:
    """The prefix the class's folders share (lower case, without its `-`), or None.

    Of the ways to cut a folder name at a `-`, the part before the cut carried by the most
    folders, provided more than half of them carry it. Every folder carrying `hw-1` also
    carries `hw`, so on a tie the longest cut is the class's (`hw-1-ann`, `hw-1-bo`: `hw-1`).
    An outsider cannot move it: GitHub Classroom names an outsider's clone `<prefix>-<their
    username>`, and a cut inside their username (`attention-a` of `attention-a-alice`) is
    carried only by folders whose username starts the same way, so it loses to the class's
    as soon as one other folder does not. A single folder cut in several ways (a class of one)
    is ambiguous and gives no prefix (only a bare username then matches). A class of bare
    usernames has none either (no cut is carried by most of its folders)."""
    names = [n.lower() for n in names]
    counts: Counter[str] = Counter()
    for low in names:
        counts.update({low[:i] for i, ch in enumerate(low) if ch == SEPARATOR and i > 0})
    if not counts:
        return None
    top = max(counts.values())
    tied = [p for p, n in counts.items() if n == top]
    if 2 * top <= len(names) or (top < 2 and len(tied) > 1):
        return None
    return max(tied, key=lambda p: (len(p), p))


def claimants(name: str, by_user: dict[str, Member], prefix: str | None) -> list[Member]:
    """The roster members whose exact folder name `name` is, `<user>` or `<prefix>-<user>`,
    without regard to case: one, none, or two when it reads both ways (folder `hw1-ann` with
    roster users `hw1-ann` and `ann` in a class whose prefix is `hw1`), which is ambiguous."""
    low = name.lower()
    found = [by_user[low]] if low in by_user else []
    start = f"{prefix}{SEPARATOR}" if prefix else None
    if start and low.startswith(start):
        other = by_user.get(low[len(start):])
        if other is not None and all(other is not m for m in found):
            found.append(other)
    return found


def claimed(name: str, by_user: dict[str, Member], prefix: str | None) -> Member | None:
    """The one roster member the folder `name` belongs to (None: no one, or ambiguous)."""
    found = claimants(name, by_user, prefix)
    return found[0] if len(found) == 1 else None


def who_text(m: Member) -> str:
    """A roster student as every output names them: `Erin (1003, GitHub user erin)`."""
    more = [m.identifier] if m.name and m.identifier != m.name else []
    if m.github_username and m.github_username != m.identifier:
        more.append(f"GitHub user {m.github_username}")
    head = m.name or m.identifier
    return f"{head} ({', '.join(more)})" if more else head


def join(members: list[Member], students: list[Student]) -> Joined:
    """Pair each roster member with their submission: a row per member (a "missing" one when
    there is none, an "ambiguous" one when several claim them, or one folder's name reads as
    theirs and as another student's, each claimant then on a row of its own after it) and a
    row per submission that matched no one."""
    by_user = {m.github_username.lower(): m for m in members if m.github_username}
    by_folder = {sub: m for m in members for sub in m.submissions}
    names = [_folder_name(s) for s in students]
    prefix = class_prefix(names)
    claims: dict[int, list[Student]] = {}
    two_ways: dict[int, list[Member]] = {}   # id(student): the members its name reads as
    unmatched: list[Student] = []
    for s, folder in zip(students, names):
        found = [by_folder[folder]] if folder in by_folder else \
            claimants(folder, by_user, prefix)
        if not found:
            unmatched.append(s)
            continue
        if len(found) > 1:
            two_ways[id(s)] = found
            s.notes.append(f"note: the folder name {folder} reads as roster student "
                           + " and as ".join(who_text(m) for m in found)
                           + "; it was counted for neither: rename the folder or correct the "
                           "roster, and grade again")
        for m in found:
            claims.setdefault(id(m), []).append(s)
    rows: list[tuple[Member | None, Student]] = []
    missing: list[Member] = []
    contested: list[tuple[Member, list[Student]]] = []
    placed: set[int] = set()   # claimants already given their own row
    for m in members:
        mine = claims.get(id(m), [])
        if len(mine) == 1 and id(mine[0]) not in two_ways:
            rows.append((m, mine[0]))
            continue
        who = f" (GitHub user {m.github_username})" if m.github_username else ""
        if not mine:
            missing.append(m)
            rows.append((m, Student(m.name or m.github_username or m.identifier, None, None,
                                    problem=f"missing: no submission found for "
                                            f"{who_text(m)}", missing=True)))
            continue
        contested.append((m, mine))
        folders = ", ".join(_folder_name(s) for s in mine)
        if len(mine) == 1:
            what = (f"the folder {folders} reads as {m.identifier}{who}'s and as another "
                    "roster student's; it was not counted for this row")
        else:
            what = (f"{len(mine)} submissions claim {m.identifier}{who}: {folders}; none was "
                    "counted for this row")
        rows.append((m, Student(m.name or m.github_username or m.identifier, None, None,
                                problem=f"{AMBIGUOUS}: {what} (each is graded on a row of its "
                                        "own): keep the student's own and grade again")))
        for s in mine:
            others = ", ".join(_folder_name(o) for o in mine if o is not s)
            if others:
                s.notes.append(f"note: this submission and {others} all claim roster student "
                               f"{m.identifier}; it was not counted for the roster row")
            if id(s) not in placed:
                placed.add(id(s))
                rows.append((None, s))
    rows += [(None, s) for s in unmatched]
    return Joined(rows, unmatched, missing, contested)


def safe_identifier(text: str) -> str:
    """An identifier shown on one line (roster cells are the instructor's, but may be pasted
    from anywhere)."""
    return re.sub(r"[\x00-\x1f\x7f]", " ", text).strip()
