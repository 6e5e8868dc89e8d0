"""The instructor's term around class grading: due dates, late policy, roster columns and the
gradebook file an LMS imports.

`apply_due` replaces each Classroom repository's file by the one committed at or before the due
time (read from git into a staging folder, the student's working tree untouched); with a late
policy, by the latest commit, whose lateness then costs points in `adjusted_total`.
`gradebook.csv` has the columns Canvas's gradebook import reads (`Student`, `SIS User ID`,
`SIS Login ID`, `Section`, then one column per assignment, named by the assignment's title) and
that Moodle's CSV import maps in its form (identify users by `SIS User ID` mapped to "ID
number", the title column mapped to the grade item).
"""
from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from . import git_history
from .classlist import Student, display
from .roster import who_text
from .standing import Standing, days_text, plain_standing
from ..feedback.totals import Totals
from ..model.safetext import csv_cell
from ..model.status import QuestionStatus

NO_SUBMISSION_BEFORE_DUE = "no submission before the due date"
NOTHING_OF_YOURS = "nothing of yours before the due date"


@dataclass(frozen=True)
class LatePolicy:
    """`percent` of the points lost per day late (a started day counts), at most `cap`."""
    percent: float
    cap: float = 100.0

    @classmethod
    def parse(cls, text: str) -> "LatePolicy":
        """`10%/day` or `10%/day,max=50%`."""
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%?\s*/\s*day\s*(?:,\s*max\s*=\s*(\d+(?:\.\d+)?)"
                         r"\s*%?)?\s*", text)
        if not m:
            raise ValueError(f"--late-policy {text!r}: write e.g. 10%/day or 10%/day,max=50%")
        percent, cap = float(m.group(1)), float(m.group(2) or 100)
        if percent > 100 or cap > 100:
            raise ValueError(f"--late-policy {text!r}: percentages are at most 100")
        return cls(percent, cap)

    def deduction(self, days: int) -> float:
        """The fraction of the score lost after `days` days."""
        return min(self.cap, self.percent * days) / 100.0

    def __str__(self) -> str:
        """`10 % per day late (a started day counts), at most 50 %`."""
        cap = f", at most {self.cap:g} %" if self.cap < 100 else ""
        return f"{self.percent:g} % per day late (a started day counts){cap}"


@dataclass
class DueInfo:
    commit: str = ""
    committed: str = ""
    later_commits: int | str = ""
    late_by_hours: float | str = ""
    days_late: int = 0
    no_submission: bool = False


def commits_text(n: int) -> str:
    return f"{n} later commit" if n == 1 else f"{n} later commits"


def only_the_template(content: bytes, notebook: bool, templates: list[Path]) -> bool:
    """Whether `content` is the student template itself (line endings and trailing spaces
    aside; a notebook's code cells compared): the starter commit, none of the student's work."""
    from ..intake.submissions import UnreadableSubmission, read_notebook

    def code(raw: bytes, is_notebook: bool) -> list[str]:
        text = raw.decode("utf-8-sig")
        if is_notebook:
            text = read_notebook(text).source
        return [line.rstrip() for line in text.replace("\r\n", "\n").strip().splitlines()]

    try:
        mine = code(content, notebook)
        return any(mine == code(t.read_bytes(), t.suffix == ".ipynb") for t in templates
                   if (t.suffix == ".ipynb") == notebook)
    except (OSError, UnicodeDecodeError, UnreadableSubmission):
        return False


def apply_due(students: list[Student], due: datetime, student_file: str, stage: Path,
              policy: LatePolicy | None, templates: list[Path] = (),
              extended: dict[int, datetime] | None = None) -> dict[int, DueInfo]:
    """Point each student in a git repository at their file as of the due time (staged in
    `stage`); {id(student): what was graded}. Folders that are not repositories are graded as
    they are, with a note. A repository whose commits before the due time hold only the
    template (one of `templates`) or no file, and whose work all came later, is "missing"
    (without a late policy: with one, the latest commit is graded). `extended`: {id(student):
    their own due time} for students with an extension."""
    from ..intake.submissions import MAX_BYTES, MAX_NOTEBOOK_BYTES

    infos: dict[int, DueInfo] = {}
    class_due = due
    for i, s in enumerate(students):
        due = (extended or {}).get(id(s), class_due)
        if s.folder is None:
            continue
        foreign = git_history.foreign_git(s.folder)
        if foreign is not None:
            # Its history may be anyone's: grading the working tree instead would let a late
            # commit through, so nothing is graded.
            infos[id(s)] = DueInfo()
            s.file, s.problem = None, foreign
            continue
        if not git_history.is_repository(s.folder):
            s.notes.append("note: not a git repository, so the due date could not be applied: "
                           "graded as it is")
            continue
        info = DueInfo()
        infos[id(s)] = info
        try:
            v = git_history.due_version(s.folder, due)
        except git_history.HistoryError as e:
            s.file, s.problem = None, f"the repository's history could not be read: {e}"
            continue
        except (OSError, ValueError, OverflowError) as e:
            # Whatever else a forged repository provokes ends this student's row, not the run.
            s.file, s.problem = None, ("the repository's history could not be read "
                                       f"({type(e).__name__})")
            continue
        info.later_commits = v.later_commits
        if v.latest_late_by is not None:
            info.late_by_hours = round(v.latest_late_by.total_seconds() / 3600, 2)
        commit = v.commit
        if policy is not None and v.latest_late_by is not None:
            commit = v.latest
            info.days_late = git_history.days_late(v.latest_late_by)
        later = f"{commits_text(v.later_commits)} (the latest " \
            f"{git_history.describe_late(v.latest_late_by)} late)" if v.later_commits else ""
        if commit is None:
            info.no_submission, s.missing = True, True
            s.file, s.problem = None, f"{NO_SUBMISSION_BEFORE_DUE}; {later}"
            continue
        # Work only after the due time (not graded without a late policy): the starter commit
        # before it is none of the student's, so the row is "missing", not "not attempted".
        all_later = commit == v.commit and v.later_commits > 0
        try:
            rel, content = git_history.read_at(s.folder, commit, student_file, MAX_BYTES,
                                               MAX_NOTEBOOK_BYTES)
        except git_history.NoFileInCommit as e:
            if all_later:
                info.no_submission, s.missing = True, True
                s.file, s.problem = None, f"{NOTHING_OF_YOURS} ({e}); {later}"
            else:
                s.file, s.problem = None, f"commit {commit[:10]}: {e}"
            continue
        except git_history.HistoryError as e:
            s.file, s.problem = None, f"commit {commit[:10]}: {e}"
            continue
        if all_later and only_the_template(content, rel.endswith(".ipynb"), list(templates)):
            info.no_submission, s.missing = True, True
            s.file, s.problem = None, (f"{NOTHING_OF_YOURS} (the commits before it hold only "
                                       f"the template); {later}")
            continue
        info.commit = commit
        info.committed = (v.committed if commit == v.commit else v.latest_committed) or ""
        # A notebook keeps its own name (feedback names its cells by it); a .py file is
        # staged under the assignment's name, as the worker imports it.
        own = Path(rel).name
        target = stage / f"{i:05d}" / (own if own.endswith(".ipynb") else
                                       Path(student_file).stem + ".py")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        s.file, s.problem = target, None
        when = "the last at or before the due time" if commit == v.commit else \
            f"the latest, {days_text(info.days_late)} late"
        after = f"; {commits_text(v.later_commits)}, the latest " \
                f"{git_history.describe_late(v.latest_late_by)} after the due time, not graded" \
            if all_later else ""
        s.notes.insert(0, f"graded {display(rel)} at commit {commit[:10]} ({when}){after}")
    return infos


def adjusted(total: float, info: DueInfo | None, policy: LatePolicy | None) -> float:
    if info is None or policy is None or not info.days_late:
        return total
    return round(total * (1 - policy.deduction(info.days_late)), 6)


def write_lms_csv(path: Path, title: str, rows: list[tuple[str, str, float | None]]) -> Path:
    """`gradebook.csv`: (student name, identifier, points) per student; points None leaves the
    cell empty (the LMS keeps what it has). Cells from the roster pass through csv_cell."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["Student", "SIS User ID", "SIS Login ID", "Section", csv_cell(title)])
    for name, ident, points in rows:
        writer.writerow([csv_cell(name), csv_cell(ident), "", "",
                         "" if points is None else csv_cell(points)])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, path)
    return path


class Term:
    """What `autograder grade --roster/--due/--late-policy` adds around class grading."""

    def __init__(self, assignment, students: list[Student], *, roster: str | None,
                 due: str | None, late_policy: str | None, out: Path | None,
                 extensions: str | None = None):
        from .decisions import StudentNames, load_extensions
        from .roster import AMBIGUOUS, join, load_roster

        if late_policy and not due:
            raise ValueError("--late-policy needs --due")
        if extensions and not due:
            raise ValueError("--extensions needs --due (the class's due time)")
        self.assignment = assignment
        self.policy = LatePolicy.parse(late_policy) if late_policy else None
        self.due = git_history.parse_due(due) if due else None
        self.members: dict[int, object] = {}
        self.unmatched: list[Student] = []
        self.missing: list = []
        self.contested: list = []
        self.ambiguous: set[int] = set()   # id() of the roster rows several submissions claim
        self.roster = roster is not None
        if roster is not None:
            joined = join(load_roster(Path(roster)), students)
            students = [s for _, s in joined.rows]
            self.members = {id(s): m for m, s in joined.rows if m is not None}
            self.unmatched, self.missing = joined.unmatched, joined.missing
            self.contested = joined.contested
            self.ambiguous = {id(s) for m, s in joined.rows
                              if m is not None and s.problem
                              and s.problem.startswith(AMBIGUOUS + ":")}
            for s in self.unmatched:
                s.notes.append("note: this submission matched no one in the roster")
        self.students = students
        self.names = StudentNames([(self.members.get(id(s)), s) for s in students])
        self.extensions = load_extensions(Path(extensions), self.names) if extensions else []
        self.extended = {id(e.student): e.due for e in self.extensions}
        for e in self.extensions:
            e.student.notes.insert(0, f"extension: due {e.due.isoformat()} (the class's due "
                                      f"time is {self.due.isoformat()})")
        self.overrides: list = []
        self._tmp = None
        self.due_info: dict[int, DueInfo] = {}
        if self.due is not None:
            if out is not None:
                stage = out / ".due"
            else:
                import tempfile

                self._tmp = tempfile.TemporaryDirectory(prefix="autograder-due-")
                stage = Path(self._tmp.name)
            from .similarity import template_files

            self.due_info = apply_due(students, self.due, assignment.student_file, stage,
                                      self.policy, template_files(assignment), self.extended)

    def load_overrides(self, path: str, public_only: bool = False) -> None:
        """Read and check `--overrides` (before grading: a wrong row ends the run)."""
        from .decisions import load_overrides

        self.overrides = load_overrides(Path(path), self.names,
                                        question_points(self.assignment, public_only))

    def apply_overrides(self, graded) -> list[str]:
        from .decisions import apply_overrides

        return apply_overrides(graded, self.overrides)

    def decisions(self, graded) -> list[dict]:
        """Extensions and overrides, for report.html."""
        from .decisions import decision_rows

        return decision_rows(graded, self.extensions, self.due, self.label)

    def graded_commits(self) -> dict[int, str]:
        """{id(student): the commit graded} (with --due)."""
        return {k: info.commit for k, info in self.due_info.items() if info.commit}

    def label(self, student: Student) -> str:
        """How the term's lines name a student: the roster's name when they are on it."""
        m = self.members.get(id(student))
        return (m.name or m.github_username or m.identifier) if m is not None else student.name

    def feedback_names(self, graded) -> list[str | None]:
        """Each row's feedback file name: the roster's GitHub username (else identifier) for
        a roster student; None (named after the row) otherwise."""
        names: list[str | None] = []
        for g in graded:
            m = self.members.get(id(g.student))
            names.append((m.github_username or m.identifier) if m is not None else None)
        return names

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()

    def summary(self) -> list[str]:
        lines = []
        if self.extensions:
            lines.append(f"{len(self.extensions)} extension(s) applied: "
                         + ", ".join(f"{display(self.label(e.student))} (due "
                                     f"{e.due.isoformat()})"
                                     for e in self.extensions[:20])
                         + (" ..." if len(self.extensions) > 20 else ""))
        overridden = list(self.overrides)
        if overridden:
            lines.append(f"{len(overridden)} override(s) applied (points set by --overrides, "
                         "the grader's beside them in grades.json): "
                         + ", ".join(f"{display(self.label(o.student))} {o.question} = "
                                     f"{o.points:g}"
                                     for o in overridden[:20])
                         + (" ..." if len(overridden) > 20 else ""))
        if self.missing:
            lines.append(f"{len(self.missing)} student(s) of the roster have no submission: "
                         + ", ".join(display(who_text(m)) for m in self.missing[:20])
                         + (" ..." if len(self.missing) > 20 else ""))
        if self.unmatched:
            lines.append(f"{len(self.unmatched)} submission(s) matched no one in the roster: "
                         + ", ".join(display(str(s.folder.name if s.folder else s.name))
                                     for s in self.unmatched[:20])
                         + (" ..." if len(self.unmatched) > 20 else ""))
        if self.contested:
            lines.append(f"{len(self.contested)} roster student(s) claimed by more than one "
                         "submission (rows left without points, each claimant graded on its "
                         "own row: keep the student's own and grade again): "
                         + "; ".join(f"{display(m.identifier)} by "
                                     + ", ".join(display(str(s.folder.name if s.folder
                                                             else s.name)) for s in claims)
                                     for m, claims in self.contested[:20])
                         + (" ..." if len(self.contested) > 20 else ""))
        return [visible_line(line) for line in lines]

    def standing(self, g) -> Standing:
        """The total that counts for one graded row (see standing.py)."""
        r, info = g.result, self.due_info.get(id(g.student))
        if self.policy is None or info is None or not info.days_late or r.missing:
            return plain_standing(r)
        return Standing(r.score, r.max_score, adjusted(r.score, info, self.policy),
                        info.days_late, self.policy.deduction(info.days_late),
                        totals=Totals.of(r))

    def late_policy_text(self) -> str | None:
        return str(self.policy) if self.policy is not None else None

    def extra(self, graded) -> list[dict]:
        """Per graded row: the columns this term adds (see write_reports)."""
        rows = []
        for g in graded:
            s, r = g.student, g.result
            more: dict = {}
            member = self.members.get(id(s))
            if self.roster:
                more["identifier"] = member.identifier if member is not None else ""
                more["name"] = member.name if member is not None else ""
                more["github_username"] = member.github_username if member is not None else ""
                if id(s) in self.ambiguous:
                    more["status"] = "ambiguous"
            if self.due is not None:
                info = self.due_info.get(id(s))
                if info is not None and s.file is not None and info.commit:
                    # The row names the repository and the commit, not the staged copy.
                    r.path = f"{display(str(s.folder))}@{info.commit[:10]}"
                own_due = self.extended.get(id(s))
                more.update({"due": (own_due or self.due).isoformat(),
                             "extension": "yes" if own_due is not None else "",
                             "commit": info.commit if info else "",
                             "committed": info.committed if info else "",
                             "later_commits": info.later_commits if info else "",
                             "late_by_hours": info.late_by_hours if info else "",
                             "days_late": info.days_late if info else 0,
                             "adjusted_total": self.standing(g).counted})
            if r.missing:
                more["status"] = str(QuestionStatus.MISSING)
            if self.overrides:
                from .decisions import override_cell

                more["overrides"] = override_cell(r)
            rows.append(more)
        return rows

    def write_lms(self, out: Path, graded, extra: list[dict]) -> Path:
        """gradebook.csv: with a roster, its students (a folder that matched no one has no
        identifier the LMS could place; the summary lists it); without one, every row, named
        and identified by its folder or file name."""
        rows = []
        for g, more in zip(graded, extra):
            member = self.members.get(id(g.student))
            if not self.roster:
                s = g.student
                ident = display((s.folder or s.file).name if (s.folder or s.file) else s.name)
                if s.folder is None and s.file is not None:
                    ident = display(s.file.stem)
                rows.append((s.name, ident, more.get("adjusted_total", g.result.score)))
                continue
            if member is None:
                continue   # no identifier: the LMS could not place it (listed in the summary)
            points = more.get("adjusted_total", g.result.score)
            if id(g.student) in self.ambiguous:
                points = None   # whose work it is is undecided: the LMS keeps what it has
            rows.append((member.name or member.github_username, member.identifier, points))
        return write_lms_csv(out / "gradebook.csv", self.assignment.title, rows)


def question_points(assignment, public_only: bool = False) -> dict[str, float]:
    """Each question's points (its cases', the hidden ones unless `public_only`)."""
    from ..grading.runner import load_question_file

    points = {}
    for q in assignment.questions:
        cases = load_question_file(str(q.test_file)).test_cases
        points[q.id] = round(sum(float(tc.points or 0) for tc in cases
                                 if not (public_only and tc.hidden)), 6)
    return points


def visible_line(text: str) -> str:
    from ..model.safetext import visible

    return visible(text)
