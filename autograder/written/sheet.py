"""The spreadsheet path: `autograder review -a A R --export FILE` and `--import FILE`.

The CSV has the columns `student,question,points,rubric,comment` (`student` as grades.csv names
the row; `rubric`: item ids separated by `;`), then, for reading, `version` (the grade's
version when exported), `status` and the `answer`. On import the reading columns are ignored,
except `version`: a row whose grade changed after the export is refused rather than written
over. A row with items and no points gets the items' sum; with points and no items, the
points; with both, the points (the difference is kept as an adjustment, so a later edit of an
item still moves the score). A row with neither is left as it is. Every row is checked first:
if any is wrong, none is applied, and each wrong row is named.

Cells show format characters as codes (`safetext.csv_cell`: `<U+202E>` for a right-to-left
override in a name or an answer); on import a name is matched as the export wrote it, and a
comment written back unchanged stays the comment it was.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from ..model.safetext import csv_cell, format_codes
from ..model.written_spec import WrittenQuestion
from .store import MAX_COMMENT, Store, digest, score_of

COLUMNS = ("student", "question", "points", "rubric", "comment")
READING = ("version", "status", "answer")
MAX_BYTES = 64 * 2**20
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def export_csv(store: Store, questions: list[WrittenQuestion], path: Path) -> int:
    """Write every present answer's row; returns how many."""
    grades = store.grades()
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([*COLUMNS, *READING])
    rows = 0
    answers = {q.id: {a.student: a for a in store.answers(q.id)} for q in questions}
    students = sorted({s for per in answers.values() for s in per})
    for student in students:
        for q in questions:
            a = answers[q.id].get(student)
            if a is None:
                continue
            g = grades.get((student, q.id))
            rubric = store.rubric(q.id)
            current = g is not None and g.answer_digest == a.digest
            status = ("graded" if current else "regrade") if g else \
                ("pending" if a.text else "unanswered")
            writer.writerow([csv_cell(student), q.id,
                             f"{score_of(g.items, g.adjust, rubric, q.points):g}"
                             if current else "",
                             ";".join(g.items) if current else "",
                             csv_cell(g.comment) if current else "",
                             g.version if g else 0, status, csv_cell(a.text)])
            rows += 1
    Path(path).write_text(buf.getvalue(), encoding="utf-8")
    return rows


@dataclass
class Checked:
    changes: list = field(default_factory=list)   # for Store.save_all
    errors: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: int = 0


def _unneutralised(text: str) -> str:
    """A cell as written before `csv_cell` put an apostrophe before a formula's first
    character (the export does that to names and comments)."""
    return text[1:] if text.startswith("'") and text[1:2] and text[1] in _FORMULA else text


def check_csv(store: Store, questions: list[WrittenQuestion], path: Path) -> Checked:
    """Every row of the CSV checked against the database; nothing is written."""
    out = Checked()
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        out.errors.append(f"{path}: cannot be read ({e.strerror})")
        return out
    if len(raw) > MAX_BYTES:
        out.errors.append(f"{path}: larger than {MAX_BYTES // 2**20} MB")
        return out
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        out.errors.append(f"{path}: not UTF-8 text (byte {e.start})")
        return out
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        out.errors.append(f"{path}: the header lacks {', '.join(missing)} (it must have "
                          f"{','.join(COLUMNS)})")
        return out
    by_id = {q.id: q for q in questions}
    rubrics = {q.id: store.rubric(q.id) for q in questions}
    answers = {q.id: {a.student: a for a in store.answers(q.id)} for q in questions}
    grades = store.grades()
    seen: set[tuple[str, str]] = set()
    for n, row in enumerate(reader, 2):   # line 1 is the header
        where = f"row {n}"
        problem = _check_row(row, by_id, rubrics, answers, grades, seen, out)
        if problem:
            out.errors.append(f"{where}: {problem}")
    return out


def _check_row(row: dict, by_id, rubrics, answers, grades, seen, out: Checked) -> str | None:
    if None in row:
        return "more cells than the header has columns"
    qid = (row.get("question") or "").strip()
    shown = _unneutralised(row.get("student") or "")
    if qid not in by_id:
        return f"unknown question {qid!r} (known: {', '.join(by_id)})"
    named = [s for s in answers[qid] if format_codes(s) == shown]
    if not named:
        return f"no answer of {shown!r} to {qid} in this results folder"
    if len(named) > 1:
        if not any((row.get(k) or "").strip() for k in ("points", "rubric", "comment")):
            out.skipped += 1     # nothing asked of it: which student it is does not matter
            return None
        return f"{shown!r} names {len(named)} students, whose names differ only by format " \
               "characters: grade them on the graders' page"
    student = named[0]
    if (student, qid) in seen:
        return f"{student!r} and {qid} appear twice"
    seen.add((student, qid))
    q, rubric = by_id[qid], rubrics[qid]
    points_text = (row.get("points") or "").strip()
    items = [i.strip() for i in (row.get("rubric") or "").split(";") if i.strip()]
    comment = _unneutralised(row.get("comment") or "")
    if not points_text and not items:
        if comment.strip():
            return "a comment needs points or rubric items"
        out.skipped += 1
        return None
    unknown = [i for i in items if i not in rubric]
    if unknown:
        return f"unknown rubric item(s) {', '.join(map(repr, unknown))} for {qid} (known: " \
               f"{', '.join(rubric)})"
    if len(set(items)) != len(items):
        return "a rubric item is listed twice"
    if len(comment) > MAX_COMMENT:
        return f"the comment is longer than {MAX_COMMENT} characters"
    item_sum = sum(rubric[i].points for i in items)
    if points_text:
        try:
            points = float(points_text)
        except ValueError:
            return f"points {points_text!r} is not a number"
        if not 0 <= points <= q.points:
            return f"points {points:g} are not between 0 and {q.points:g}"
        adjust = 0.0 if points == score_of(items, 0.0, rubric, q.points) else points - item_sum
    else:
        adjust = 0.0
    g = grades.get((student, qid))
    version = g.version if g else 0
    stated = (row.get("version") or "").strip()
    if stated:
        if not stated.isdigit() or int(stated) != version:
            return (f"the grade changed after the export (by {g.grader} at {g.at}); export "
                    "again" if g else "the version does not match the database; export again")
    current = g is not None and g.answer_digest == digest(answers[qid][student].text)
    if current and sorted(g.items) == sorted(items) and abs(g.adjust - adjust) < 1e-9 \
            and format_codes(g.comment) == comment:
        out.unchanged += 1
        return None
    out.changes.append((qid, [(student, version)], items, adjust, comment))
    return None


def import_csv(store: Store, questions: list[WrittenQuestion], path: Path, who: str
               ) -> Checked:
    """Check every row, then apply all of them in one transaction, or none if any is wrong
    (`errors`) or a grade changed meanwhile (`store.Conflict` is raised)."""
    checked = check_csv(store, questions, path)
    if not checked.errors and checked.changes:
        store.save_all(checked.changes, who, "csv import")
    return checked
