"""`review.sqlite` in a class run's results folder: written answers, hand grades, the rubric as
graders edit it, answers split off their group, and the audit log.

Every write is one transaction (`BEGIN IMMEDIATE`), so a server killed mid-grade loses at most
the change in flight, and two graders (or a grader and a CSV import) cannot interleave. A grade
has a version: a change names the version it was made from, and a change made from an older
one is refused (`Conflict`), never written over. Every change goes to the audit log with who,
when, and the values before and after.

A grade is the rubric items applied, an adjustment in points and a comment; its score is the
items' points plus the adjustment, kept between 0 and the question's points, computed when read,
so editing an item's points re-scores every answer it applies to. A grade remembers the digest
of the answer it was given to: an answer whose text changed since is waiting for a grader again
("regrade"), neither kept silently nor dropped.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..model.written_spec import RubricItem, WrittenQuestion

FILE_NAME = "review.sqlite"
SCHEMA_VERSION = "1"
MAX_COMMENT = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    student TEXT NOT NULL, question TEXT NOT NULL, text TEXT NOT NULL, digest TEXT NOT NULL,
    present INTEGER NOT NULL DEFAULT 1, updated TEXT NOT NULL,
    PRIMARY KEY (student, question));
CREATE TABLE IF NOT EXISTS grades (
    student TEXT NOT NULL, question TEXT NOT NULL, items TEXT NOT NULL, adjust REAL NOT NULL,
    comment TEXT NOT NULL, answer_digest TEXT NOT NULL, grader TEXT NOT NULL, at TEXT NOT NULL,
    version INTEGER NOT NULL, PRIMARY KEY (student, question));
CREATE TABLE IF NOT EXISTS rubric (
    question TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL,
    description TEXT NOT NULL, points REAL NOT NULL, feedback TEXT NOT NULL,
    seed TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (question, id));
CREATE TABLE IF NOT EXISTS splits (
    question TEXT NOT NULL, student TEXT NOT NULL, PRIMARY KEY (question, student));
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, who TEXT NOT NULL,
    action TEXT NOT NULL, student TEXT, question TEXT, item TEXT, before TEXT, after TEXT);
"""


class StoreError(Exception):
    """A review database that cannot be used (missing, another assignment's, too new)."""


class Conflict(Exception):
    """A change made from a version that is no longer the current one."""


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Grade:
    student: str
    question: str
    items: list[str]
    adjust: float
    comment: str
    answer_digest: str
    grader: str
    at: str
    version: int

    def decision(self) -> dict:
        """What a grader decided (what the audit log records and a group shares)."""
        return {"items": list(self.items), "adjust": self.adjust, "comment": self.comment}


@dataclass
class Item:
    """A rubric item as graders have it now (written.toml's, as edited on the page)."""
    question: str
    id: str
    position: int
    description: str
    points: float
    feedback: str
    version: int

    def to_json(self) -> dict:
        return {"id": self.id, "description": self.description, "points": self.points,
                "feedback": self.feedback, "version": self.version}


@dataclass
class Answer:
    student: str
    question: str
    text: str
    digest: str
    present: bool


@dataclass
class SyncReport:
    new: int = 0
    changed: int = 0
    regrade: list[tuple[str, str]] = field(default_factory=list)   # (student, question)
    warnings: list[str] = field(default_factory=list)


def score_of(items: list[str], adjust: float, rubric: dict[str, Item], maximum: float) -> float:
    """The score of a grade: its items' points plus the adjustment, between 0 and the most."""
    total = sum(rubric[i].points for i in items if i in rubric) + adjust
    return round(min(max(total, 0.0), maximum), 6)


def feedback_lines(items: list[str], comment: str, rubric: dict[str, Item]) -> list[str]:
    """What the student reads: each applied item's feedback (or description) with its points,
    in the rubric's order, then the grader's comment."""
    applied = sorted((rubric[i] for i in items if i in rubric), key=lambda i: i.position)
    lines = [f"{i.feedback or i.description} ({i.points:+g})" for i in applied]
    if comment.strip():
        lines.append(f"Grader's comment: {comment.strip()}")
    return lines


class Store:
    """The review database of one results folder."""

    def __init__(self, path: Path):
        self.path = Path(path)

    # -- opening
    @classmethod
    def create(cls, path: Path, assignment: str, questions: list[WrittenQuestion]
               ) -> "Store":
        """Open the database, making it when it is not there yet; the rubric of written.toml
        is merged in (`sync_rubric`)."""
        store = cls(path)
        with store.transaction() as db:
            for statement in _SCHEMA.strip().split(";\n"):
                db.execute(statement)
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                db.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("schema", SCHEMA_VERSION), ("assignment", assignment),
                    ("order_salt", secrets.token_hex(16)), ("created", now())])
            else:
                store._check_meta(meta, assignment)
        store.warnings = store.sync_rubric(questions)
        return store

    @classmethod
    def existing(cls, path: Path, assignment: str, questions: list[WrittenQuestion]
                 ) -> "Store":
        """The database of a results folder a class run made; StoreError when there is none."""
        if not Path(path).is_file():
            raise StoreError(f"{path.name} is not in {path.parent}: grade the class with "
                             "`autograder grade -a ASSIGNMENT ... --out FOLDER` first (an "
                             "assignment with written questions makes it)")
        return cls.create(path, assignment, questions)

    def _check_meta(self, meta: dict, assignment: str) -> None:
        if meta.get("schema") != SCHEMA_VERSION:
            raise StoreError(f"{self.path} was made by another version of the autograder "
                             f"(schema {meta.get('schema')!r})")
        if meta.get("assignment") != assignment:
            raise StoreError(f"{self.path} holds the answers of assignment "
                             f"{meta.get('assignment')!r}, not {assignment!r}")

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 30000")
            db.execute("PRAGMA journal_mode = WAL")
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it happens or none of it."""
        with self.connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        with self.connect() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    # -- the rubric
    def sync_rubric(self, questions: list[WrittenQuestion]) -> list[str]:
        """Merge written.toml's rubric in: new items are added; an item written.toml changed
        is updated unless a grader edited it on the page since (then the page's edit stays
        and a warning says so). Items no longer in the file stay: grades use them."""
        warnings = []
        with self.transaction() as db:
            for q in questions:
                for position, item in enumerate(q.rubric):
                    seed = json.dumps(item.to_json(), sort_keys=True)
                    row = db.execute("SELECT description, points, feedback, seed, version "
                                     "FROM rubric WHERE question = ? AND id = ?",
                                     (q.id, item.id)).fetchone()
                    if row is None:
                        db.execute("INSERT INTO rubric VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                                   (q.id, item.id, position, item.description, item.points,
                                    item.feedback, seed))
                        continue
                    if row[3] == seed:
                        db.execute("UPDATE rubric SET position = ? WHERE question = ? AND "
                                   "id = ?", (position, q.id, item.id))
                        continue
                    current = json.dumps({"id": item.id, "description": row[0],
                                          "points": row[1], "feedback": row[2]}, sort_keys=True)
                    if current == row[3]:   # not edited on the page: the file's edit counts
                        db.execute("UPDATE rubric SET description = ?, points = ?, "
                                   "feedback = ?, seed = ?, position = ?, version = ? WHERE "
                                   "question = ? AND id = ?",
                                   (item.description, item.points, item.feedback, seed,
                                    position, row[4] + 1, q.id, item.id))
                        self._audit(db, "written.toml", "edit rubric item", None, q.id,
                                    item.id, json.loads(current), item.to_json())
                    else:
                        db.execute("UPDATE rubric SET seed = ?, position = ? WHERE "
                                   "question = ? AND id = ?", (seed, position, q.id, item.id))
                        warnings.append(f"rubric item {item.id!r} of {q.id!r} was edited in "
                                        "the review page and in written.toml: the page's "
                                        "version is kept")
        return warnings

    def rubric(self, question: str) -> dict[str, Item]:
        with self.connect() as db:
            rows = db.execute("SELECT question, id, position, description, points, feedback, "
                              "version FROM rubric WHERE question = ? ORDER BY position, id",
                              (question,)).fetchall()
        return {r[1]: Item(*r) for r in rows}

    def edit_item(self, question: str, item_id: str, *, description: str, points: float,
                  feedback: str, version: int, who: str) -> int:
        """Change a rubric item; returns how many grades it applies to (all re-scored)."""
        with self.transaction() as db:
            row = db.execute("SELECT description, points, feedback, version FROM rubric WHERE "
                             "question = ? AND id = ?", (question, item_id)).fetchone()
            if row is None:
                raise KeyError(item_id)
            if row[3] != version:
                raise Conflict(f"rubric item {item_id!r} was changed by someone else since "
                               "you loaded the page; reload to see it")
            db.execute("UPDATE rubric SET description = ?, points = ?, feedback = ?, "
                       "version = ? WHERE question = ? AND id = ?",
                       (description, points, feedback, version + 1, question, item_id))
            self._audit(db, who, "edit rubric item", None, question, item_id,
                        {"description": row[0], "points": row[1], "feedback": row[2]},
                        {"description": description, "points": points, "feedback": feedback})
            used = db.execute("SELECT items FROM grades WHERE question = ?",
                              (question,)).fetchall()
        return sum(item_id in json.loads(r[0]) for r in used)

    # -- answers
    def sync_answers(self, rows: list[tuple[str, str, str]], who: str = "autograder grade"
                     ) -> SyncReport:
        """Record the answers of a class run, (student, question, text) each: new ones are
        added, changed ones replaced (a graded one waits for a grader again: "regrade", in the
        audit log), and answers of students not in this run are kept but not shown."""
        report = SyncReport()
        stamp = now()
        with self.transaction() as db:
            db.execute("UPDATE answers SET present = 0")
            for student, question, text in rows:
                d = digest(text)
                old = db.execute("SELECT digest FROM answers WHERE student = ? AND "
                                 "question = ?", (student, question)).fetchone()
                if old is None:
                    db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, 1, ?)",
                               (student, question, text, d, stamp))
                    report.new += 1
                    continue
                if old[0] == d:
                    db.execute("UPDATE answers SET present = 1 WHERE student = ? AND "
                               "question = ?", (student, question))
                    continue
                db.execute("UPDATE answers SET text = ?, digest = ?, present = 1, updated = ? "
                           "WHERE student = ? AND question = ?",
                           (text, d, stamp, student, question))
                report.changed += 1
                graded = db.execute("SELECT answer_digest FROM grades WHERE student = ? AND "
                                    "question = ?", (student, question)).fetchone()
                if graded is not None and graded[0] != d:
                    report.regrade.append((student, question))
                    self._audit(db, who, "answer changed after grading", student, question,
                                None, {"answer": old[0][:16]}, {"answer": d[:16]})
        return report

    def answers(self, question: str, present_only: bool = True) -> list[Answer]:
        with self.connect() as db:
            rows = db.execute("SELECT student, question, text, digest, present FROM answers "
                              "WHERE question = ?" + (" AND present = 1" if present_only
                                                      else ""), (question,)).fetchall()
        return [Answer(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows]

    # -- grades
    def grades(self, question: str | None = None) -> dict[tuple[str, str], Grade]:
        with self.connect() as db:
            rows = db.execute("SELECT student, question, items, adjust, comment, "
                              "answer_digest, grader, at, version FROM grades"
                              + (" WHERE question = ?" if question else ""),
                              (question,) if question else ()).fetchall()
        return {(r[0], r[1]): Grade(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], r[7],
                                    r[8]) for r in rows}

    def save(self, question: str, members: list[tuple[str, int]], *, items: list[str],
             adjust: float, comment: str, who: str, action: str = "grade") -> dict[str, int]:
        """Give one decision to every (student, version it was made from) of `members`, all or
        none: a member whose grade changed since that version (0: no grade yet) refuses the
        whole change (`Conflict`, naming who changed it). Returns the new versions."""
        with self.transaction() as db:
            return self._save(db, question, members, items, adjust, comment, who, action)

    def save_all(self, changes: list[tuple[str, list[tuple[str, int]], list[str], float, str]],
                 who: str, action: str) -> int:
        """Several decisions, (question, members, items, adjust, comment) each, in one
        transaction: all of them or, on any conflict, none."""
        with self.transaction() as db:
            for question, members, items, adjust, comment in changes:
                self._save(db, question, members, items, adjust, comment, who, action)
        return len(changes)

    def _save(self, db: sqlite3.Connection, question: str, members: list[tuple[str, int]],
              items: list[str], adjust: float, comment: str, who: str, action: str
              ) -> dict[str, int]:
        comment = comment[:MAX_COMMENT]
        stamp = now()
        after = {"items": list(items), "adjust": adjust, "comment": comment}
        out = {}
        for student, expected in members:
            answer = db.execute("SELECT digest FROM answers WHERE student = ? AND "
                                "question = ?", (student, question)).fetchone()
            if answer is None:
                raise KeyError(student)
            row = db.execute("SELECT items, adjust, comment, grader, at, version FROM "
                             "grades WHERE student = ? AND question = ?",
                             (student, question)).fetchone()
            current = row[5] if row else 0
            if current != expected:
                raise Conflict(f"{row[3]} changed this grade at {row[4]} (UTC), after you "
                               "loaded it; reload to see their decision, then decide again"
                               if row else "this grade was removed after you loaded it; reload")
            before = {"items": json.loads(row[0]), "adjust": row[1], "comment": row[2]} \
                if row else None
            db.execute("INSERT OR REPLACE INTO grades VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (student, question, json.dumps(list(items)), float(adjust), comment,
                        answer[0], who, stamp, current + 1))
            self._audit(db, who, action, student, question, None, before, after)
            out[student] = current + 1
        return out

    def split(self, question: str, student: str, who: str) -> None:
        """Take an answer out of its group: it is graded on its own from now on."""
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO splits VALUES (?, ?)", (question, student))
            self._audit(db, who, "split from group", student, question, None, None, None)

    def splits(self, question: str) -> set[str]:
        with self.connect() as db:
            return {r[0] for r in db.execute("SELECT student FROM splits WHERE question = ?",
                                             (question,))}

    # -- the audit log
    @staticmethod
    def _audit(db: sqlite3.Connection, who: str, action: str, student: str | None,
               question: str | None, item: str | None, before, after) -> None:
        db.execute("INSERT INTO audit (at, who, action, student, question, item, before, "
                   "after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (now(), who, action, student, question, item,
                    None if before is None else json.dumps(before),
                    None if after is None else json.dumps(after)))

    def audit(self, limit: int = 500, offset: int = 0) -> list[dict]:
        with self.connect() as db:
            rows = db.execute("SELECT id, at, who, action, student, question, item, before, "
                              "after FROM audit ORDER BY id DESC LIMIT ? OFFSET ?",
                              (limit, offset)).fetchall()
        keys = ("id", "at", "who", "action", "student", "question", "item", "before", "after")
        return [dict(zip(keys, r)) for r in rows]


def rubric_items(items: dict[str, Item]) -> list[RubricItem]:
    return [RubricItem(i.id, i.description, i.points, i.feedback) for i in items.values()]
