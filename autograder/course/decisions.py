"""Per-student decisions the instructor writes down: extensions (`grade --extensions FILE`,
CSV `student,due`) and overrides (`grade --overrides FILE`, CSV `student,question,points,
reason`).

The files are the instructor's, but a typo in one must not grade anyone wrongly: every row is
checked before anything is graded (the student exists and is named once, the due time has a
zone, the question exists, the points are a number within the question's points, a reason is
given, no row repeats another), and the first problems found end the run with a message naming
the file and the row. A student is named as the roster names them (identifier, GitHub username
or name) or as the class folder names them (folder or file name), without regard to case. What
the files say reaches CSV cells, Markdown, HTML and the terminal through the same escaping as
students' text (`safetext`).
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..model.safetext import visible
from .classlist import Student, display

MAX_BYTES = 8 * 2**20
MAX_ROWS = 100_000
MAX_REASON = 500
MAX_PROBLEMS = 10   # problems listed before the run ends (a wrong file has many)


class DecisionError(ValueError):
    """A decisions file that cannot be applied as written: the message lists each row's problem."""


@dataclass
class Extension:
    student: Student
    due: datetime
    row: int


@dataclass
class Override:
    student: Student
    question: str
    points: float
    reason: str
    row: int


def _rows(path: Path, columns: tuple[str, ...], what: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, {column: stripped text}) per non-blank row of a CSV whose first line
    names at least `columns` (any case, any order)."""
    try:
        raw = path.read_bytes()[:MAX_BYTES + 1]
    except OSError as e:
        raise DecisionError(f"{what} {display(str(path))}: {e.strerror}") from None
    if len(raw) > MAX_BYTES:
        raise DecisionError(f"{what} {display(str(path))} is larger than "
                            f"{MAX_BYTES // 2**20} MB")
    reader = csv.reader(io.StringIO(raw.decode("utf-8-sig", "replace")))
    header = next(reader, None) or []
    names = [h.strip().lower() for h in header]
    lacking = [c for c in columns if c not in names]
    if lacking:
        raise DecisionError(f"{what} {display(str(path))}: the first line must name the columns "
                            f"{', '.join(columns)} (missing: {', '.join(lacking)})")
    rows = []
    for n, cells in enumerate(reader, 2):
        if n > MAX_ROWS:
            raise DecisionError(f"{what} {display(str(path))} has more than {MAX_ROWS} rows")
        if not any(c.strip() for c in cells):
            continue
        rows.append((n, {c: (cells[names.index(c)] if names.index(c) < len(cells) else "")
                         .strip() for c in columns}))
    return rows


class StudentNames:
    """Which student a decision names: every name a roster row or a class folder gives."""

    def __init__(self, rows: list[tuple[object | None, Student]]):
        self._by: dict[str, list[Student]] = {}
        for member, s in rows:
            names = {s.name}
            if s.folder is not None:
                names.add(display(s.folder.name))
            elif s.file is not None:
                names |= {display(s.file.name), display(s.file.stem)}
            if member is not None:
                names |= {getattr(member, "identifier", ""), getattr(member, "github_username", ""),
                          getattr(member, "name", "")}
            for name in names:
                key = name.strip().lower()
                if key and all(o is not s for o in self._by.get(key, [])):
                    self._by.setdefault(key, []).append(s)

    def find(self, text: str) -> tuple[Student | None, str]:
        """The one student named `text`, or None and why not."""
        found = self._by.get(text.strip().lower(), [])
        if len(found) == 1:
            return found[0], ""
        if not found:
            return None, f"no student {text!r} in the roster or the class folder"
        return None, (f"{text!r} names {len(found)} students ("
                      + ", ".join(repr(s.name) for s in found[:4])
                      + "): use the roster identifier or the folder name")


def _fail(path: Path, what: str, problems: list[str]) -> DecisionError:
    shown = problems[:MAX_PROBLEMS]
    more = f"\n  ... and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS \
        else ""
    return DecisionError(f"{what} {display(str(path))} was not applied, and nothing was graded:\n"
                         + "\n".join(f"  {p}" for p in shown) + more)


def load_extensions(path: Path, names: StudentNames) -> list[Extension]:
    """Every row of an extensions file, checked (see the module's note)."""
    from .git_history import parse_due

    what = "--extensions"
    problems: list[str] = []
    out: list[Extension] = []
    seen: dict[int, int] = {}
    for n, row in _rows(path, ("student", "due"), what):
        student, why = names.find(row["student"])
        if student is None:
            problems.append(f"row {n}: {why}")
            continue
        try:
            due = parse_due(row["due"])
        except ValueError:
            problems.append(f"row {n}: due {row['due']!r} is not an ISO 8601 time with a zone "
                            "(e.g. 2026-12-05T23:59:00+01:00)")
            continue
        if id(student) in seen:
            problems.append(f"row {n}: {row['student']!r} already has an extension (row "
                            f"{seen[id(student)]})")
            continue
        seen[id(student)] = n
        out.append(Extension(student, due, n))
    if problems:
        raise _fail(path, what, problems)
    return out


def load_overrides(path: Path, names: StudentNames, max_points: dict[str, float]
                   ) -> list[Override]:
    """Every row of an overrides file, checked; `max_points`: each question's points."""
    what = "--overrides"
    problems: list[str] = []
    out: list[Override] = []
    seen: dict[tuple[int, str], int] = {}
    for n, row in _rows(path, ("student", "question", "points", "reason"), what):
        student, why = names.find(row["student"])
        qid = row["question"]
        if student is None:
            problems.append(f"row {n}: {why}")
        if qid not in max_points:
            problems.append(f"row {n}: no question {qid!r} (the questions: "
                            f"{', '.join(max_points)})")
        try:
            points = float(row["points"])
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            problems.append(f"row {n}: points {row['points']!r} is not a number")
        elif qid in max_points and not 0 <= points <= max_points[qid]:
            problems.append(f"row {n}: {points:g} points is outside 0 to {max_points[qid]:g}, "
                            f"the points of {qid}")
        if not row["reason"]:
            problems.append(f"row {n}: no reason given (the student reads it in their feedback)")
        elif len(row["reason"]) > MAX_REASON:
            problems.append(f"row {n}: the reason is longer than {MAX_REASON} characters")
        if student is None or qid not in max_points or not math.isfinite(points):
            continue
        key = (id(student), qid)
        if key in seen:
            problems.append(f"row {n}: {row['student']!r} already has an override of {qid} "
                            f"(row {seen[key]})")
            continue
        seen[key] = n
        # One line, control characters shown as escapes: the same text in every output.
        out.append(Override(student, qid, points, visible(row["reason"]), n))
    if problems:
        raise _fail(path, what, problems)
    return out


def apply_overrides(graded, overrides: list[Override]) -> list[str]:
    """Set each overridden question's points (after grading, on every run: the cache keeps
    what the grader computed). Returns a line per override whose question this run did not
    grade (`--question`)."""
    by_student = {id(g.student): g for g in graded}
    skipped = []
    for o in overrides:
        g = by_student.get(id(o.student))
        q = g.result.questions.get(o.question) if g is not None else None
        if q is None:
            skipped.append(f"override of {o.question} for {o.student.name} (row {o.row}) not "
                           "applied: the question was not graded in this run")
            continue
        q.override = {"points": o.points, "reason": o.reason}
    return skipped


def override_cell(result) -> str:
    """grades.csv's `overrides` cell: `softmax: 6 (grader 5; reason)`, one per question."""
    return "; ".join(f"{qid}: {q.score:g} (grader {q.computed_score:g}; "
                     f"{q.override.get('reason', '')})"
                     for qid, q in result.questions.items() if q.override is not None)


def decision_rows(graded, extensions: list[Extension], due: datetime | None,
                  label=lambda s: s.name) -> list[dict]:
    """report.html's "decisions" section: one row per extension and per override; `label`
    names a student."""
    rows = []
    for e in extensions:
        was = f" (the class's: {due.isoformat()})" if due is not None else ""
        rows.append({"student": label(e.student), "what": "extension",
                     "detail": f"due {e.due.isoformat()}{was}", "reason": ""})
    for g in graded:
        for qid, q in g.result.questions.items():
            if q.override is not None:
                rows.append({"student": label(g.student), "what": f"override of {qid}",
                             "detail": f"{q.score:g} points (the grader gave "
                                       f"{q.computed_score:g})",
                             "reason": str(q.override.get("reason", ""))})
    return rows
