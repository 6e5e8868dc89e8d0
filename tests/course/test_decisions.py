"""Per-student decisions and one name per student: `grade --extensions` and `--overrides`, a
gradebook without a roster, the roster's name and username everywhere, and every row of a
decisions file checked before anything is graded.

One small class (softmax only) with a roster, a due date, a late policy, an extension and an
override is graded once; a second run on the same folder checks that the override still
applies to results read back from the cache."""
import csv
import json

import pytest

from helpers import AUTOGRADED_MAX, SUBMISSIONS, cli_in_process, make_repo, max_points

from autograder.course.classlist import Student
from autograder.course.roster import AMBIGUOUS, Member, join

CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"
DUE = "2026-12-01T23:59:00+01:00"
BOB_DUE = "2026-12-03T23:59:00+01:00"
# The instructor's text reaches a CSV cell, Markdown, HTML and the terminal.
# The softmax question's points (every run here grades that question only).
FULL = f"{max_points('softmax'):g}"
REASON = "=cmd|' /C calc'!A0 <b>regrade</b> *after* review \x1b[31m"


def _grade(cls, out, *extra):
    return cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out),
                          "--question", "softmax", "--jobs", "1", *extra)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("decisions")
    cls = root / "class"
    make_repo(cls, "hw1-ann", [(CORRECT, "2026-12-01T20:00:00+01:00")])    # on time
    make_repo(cls, "hw1-bob", [(CORRECT, "2026-12-03T09:00:00+01:00")])    # late, extended
    make_repo(cls, "hw1-cy", [(WRONG, "2026-12-01T10:00:00+01:00")])       # on time, wrong
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name\n1,ann,Ann A\n2,bob,Bob B\n3,cy,Cy C\n"
                      "4,dee,Dee D\n")                                        # Dee: no folder
    extensions = root / "extensions.csv"
    extensions.write_text(f"student,due\nbob,{BOB_DUE}\n")    # by GitHub username
    overrides = root / "overrides.csv"
    with open(overrides, "w", newline="") as f:                # by roster identifier
        csv.writer(f).writerows([["student", "question", "points", "reason"],
                                 ["1", "softmax", "4", REASON]])
    out = root / "out"
    args = ("--roster", str(roster), "--due", DUE, "--late-policy", "10%/day",
            "--extensions", str(extensions), "--overrides", str(overrides), "--feedback")
    first = _grade(cls, out, *args)
    again = _grade(cls, out, *args)
    return {"root": root, "cls": cls, "out": out, "first": first, "again": again,
            "roster": roster, "rows": {row["identifier"]: row for row in csv.DictReader(
                (out / "grades.csv").open(encoding="utf-8"))},
            "json": {s.get("identifier"): s for s in
                     json.loads((out / "grades.json").read_text())["submissions"]},
            "report": (out / "report.html").read_text(),
            "feedback": {p.name: p.read_text() for p in (out / "feedback").iterdir()}}


def test_runs_finish(term):
    for run in ("first", "again"):
        assert term[run].returncode == 0, term[run].stdout + term[run].stderr[-3000:]


# ------------------------------------------------------------------ extensions

def test_an_extension_moves_that_students_due_time(term):
    """Bob's only commit is a day late for the class, on time for his extension: graded in
    full, no day late, and every output says an extension applied."""
    bob = term["rows"]["2"]
    assert bob["status"] == "graded" and bob["total"] == FULL and bob["days_late"] == "0"
    assert bob["adjusted_total"] == FULL and bob["extension"] == "yes"
    assert bob["due"] == BOB_DUE and term["rows"]["1"]["due"] == DUE
    assert term["rows"]["1"]["extension"] == ""
    assert term["json"]["2"]["extension"] == "yes" and term["json"]["2"]["due"] == BOB_DUE
    assert f"extension: due {BOB_DUE}" in term["feedback"]["bob.md"]
    assert f"extension: due {BOB_DUE}" in term["feedback"]["bob.html"]
    assert f"1 extension(s) applied: Bob B (due {BOB_DUE})" in term["first"].stdout
    decisions = term["report"].split('id="decisions"')[1].split("</table>")[0]
    assert "Bob B" in decisions and f"due {BOB_DUE}" in decisions


# ------------------------------------------------------------------ overrides

def test_an_override_sets_the_points_and_keeps_the_graders(term):
    ann = term["json"]["1"]
    q = ann["questions"]["softmax"]
    assert q["score"] == 4 and q["computed_score"] == float(FULL) and ann["score"] == 4
    assert q["override"] == {"points": 4.0, "reason": REASON.replace("\x1b", "\\x1b")}
    assert q["status"] == "passed"                   # what the grader saw
    assert term["rows"]["1"]["softmax"] == "4" and term["rows"]["1"]["total"] == "4"
    assert term["rows"]["1"]["overrides"].startswith(f"softmax: 4 (grader {FULL}; =cmd")
    lms = list(csv.reader((term["out"] / "gradebook.csv").open(encoding="utf-8")))
    assert ["Ann A", "1", "", "", "4"] in lms


def test_the_reason_reaches_the_student_escaped(term):
    md, html = term["feedback"]["ann.md"], term["feedback"]["ann.html"]
    assert f"Points set by your instructor to 4 (the grader gave {FULL})" in md
    assert r"&lt;b&gt;regrade&lt;/b&gt; \*after\* review" in md and "<b>regrade" not in md
    assert "\x1b" not in md and "\x1b" not in html
    assert "&lt;b&gt;regrade&lt;/b&gt;" in html and "<b>regrade" not in html
    cell = next(row for row in csv.reader((term["out"] / "grades.csv").open(encoding="utf-8"))
                if row and row[0] == "hw1-ann")
    assert not any(c.startswith(("=", "+", "-", "@")) for c in cell)


def test_the_terminal_and_the_report_show_the_override(term):
    out = term["first"].stdout
    row = next(line for line in out.splitlines() if line.startswith("hw1-ann"))
    assert f"4/{FULL}*" in row and "*: points set by --overrides" in out
    assert "Points set by your instructor to 4" in out and "\x1b" not in out
    assert r"\x1b[31m" in out                          # shown as an escape, not obeyed
    assert "1 override(s) applied" in out and "Ann A softmax = 4" in out
    report = term["report"]
    decisions = report.split('id="decisions"')[1].split("</table>")[0]
    assert "override of softmax" in decisions and "&lt;b&gt;regrade" in decisions
    assert "<b>regrade" not in report


def test_reruns_keep_applying_it(term):
    again = term["again"]
    assert "unchanged since the last run (cached)" in again.stdout
    row = next(line for line in again.stdout.splitlines() if line.startswith("hw1-ann"))
    assert f"4/{FULL}*" in row


# ------------------------------------------------------------------ one name per student

def test_the_roster_names_every_row(term):
    ann = term["rows"]["1"]
    assert ann["name"] == "Ann A" and ann["github_username"] == "ann"
    assert term["json"]["1"]["name"] == "Ann A"
    # Feedback files are named by the GitHub username (a missing student's too).
    assert {"ann.md", "bob.md", "cy.md", "dee.md"} <= set(term["feedback"])
    assert "have no submission: Dee D (4, GitHub user dee)" in term["first"].stdout


def test_a_one_question_run_reports_that_questions_points(term):
    """Dee's row (nothing to grade) lists only the question graded: the report's totals are
    out of the softmax question's points, not of the whole assignment's."""
    report = term["report"]
    assert f"of {FULL}.0</div>" in report and f"of {AUTOGRADED_MAX}" not in report
    assert term["rows"]["4"]["max_score"] == FULL


def test_a_class_run_without_a_roster_writes_a_gradebook(tmp_path):
    cls = tmp_path / "class"
    cls.mkdir()
    for name, src in (("ann", CORRECT), ("bob", WRONG)):
        (cls / f"{name}.py").write_bytes(src.read_bytes())
    r = _grade(cls, tmp_path / "out")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = list(csv.reader((tmp_path / "out" / "gradebook.csv").open(encoding="utf-8")))
    assert rows[0][:4] == ["Student", "SIS User ID", "SIS Login ID", "Section"]
    assert sorted(rows[1:]) == [["ann", "ann", "", "", FULL], ["bob", "bob", "", "", "5"]]


def test_a_folder_name_that_reads_as_two_roster_students_is_ambiguous(tmp_path):
    """Roster users `hw1-ann` and `ann`, class prefix `hw1`: folder hw1-ann is either; it is
    counted for neither, and both rows say so."""
    names = ["hw1-ann", "hw1-bo", "hw1-cy"]
    for n in names:
        (tmp_path / n).mkdir()
    students = [Student(n, tmp_path / n, tmp_path / n / "attention.py") for n in names]
    members = [Member("1", "hw1-ann", "Hannah"), Member("2", "ann", "Ann"),
               Member("3", "bo"), Member("4", "cy")]
    joined = join(members, students)
    rows = {m.identifier: s for m, s in joined.rows if m is not None}
    assert rows["1"].file is None and rows["1"].problem.startswith(f"{AMBIGUOUS}:")
    assert rows["2"].file is None and rows["2"].problem.startswith(f"{AMBIGUOUS}:")
    assert rows["3"].name == "hw1-bo" and rows["4"].name == "hw1-cy"
    own = [s for m, s in joined.rows if m is None]
    assert [s.name for s in own] == ["hw1-ann"]          # graded once, on its own row
    assert any("reads as roster student Hannah" in n and "Ann" in n for n in own[0].notes)


# ------------------------------------------------------------------ the files are checked

def test_a_wrong_row_refuses_the_run_naming_the_row(term, tmp_path):
    bad = tmp_path / "overrides.csv"
    bad.write_text("student,question,points,reason\n"
                   "ann,softmax,5,ok\n"
                   "zed,softmax,1,unknown student\n"
                   "ann,softmx,1,unknown question\n"
                   f"cy,softmax,{float(FULL) + 1:g},out of range\n"
                   "cy,softmax,NaN,not a number\n"
                   "bob,softmax,1,\n"
                   "ann,softmax,2,twice\n")
    out = tmp_path / "out"
    r = _grade(term["cls"], out, "--roster", str(term["roster"]), "--overrides", str(bad))
    assert r.returncode == 2
    for text in ("row 3: no student 'zed'", "row 4: no question 'softmx'",
                 f"row 5: {float(FULL) + 1:g} points is outside 0 to {FULL}", "row 6: points 'NaN' is not a number",
                 "row 7: no reason given", "row 8: 'ann' already has an override of softmax"):
        assert text in r.stderr, (text, r.stderr)
    assert not out.exists()                             # nothing was graded

    ext = tmp_path / "extensions.csv"
    ext.write_text("student,due\nbob,2026-12-03T23:59:00\nnobody,2026-12-03T23:59:00Z\n")
    r = _grade(term["cls"], out, "--roster", str(term["roster"]), "--due", DUE,
               "--extensions", str(ext))
    assert r.returncode == 2 and not out.exists()
    assert "row 2: due '2026-12-03T23:59:00' is not an ISO 8601 time with a zone" in r.stderr
    assert "row 3: no student 'nobody'" in r.stderr
    r = _grade(term["cls"], out, "--extensions", str(ext))
    assert r.returncode == 2 and "--extensions needs --due" in r.stderr
