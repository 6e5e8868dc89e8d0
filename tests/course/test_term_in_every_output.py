"""What a class run with a roster, a due date and a late policy shows, surface by surface: the
terminal table, report.html, the feedback files (.md and their .html pages), grades.csv and
grades.json all carry the same days late, adjusted total and "missing" status.

One small class (softmax only) is graded twice into one output folder, first without a late
policy and then with one: the second run regrades only the late commit (the cache holds the
rest), so three submissions and the template are graded in all."""
import csv
import json
import re
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, cli_in_process, make_repo, max_points

CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"
TEMPLATE = ROOT / "student_template" / "attention.py"
DUE = "2026-12-01T23:59:00+01:00"
# These runs grade the softmax question only: its points, and a day late's 10 % off them.
S = f"{max_points('softmax'):g}"
LATE = f"{max_points('softmax') * 0.9:g}"
# Emoji and the symbol blocks a browser without the emoji fonts shows as boxes.
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F]")




def _run(out: Path, cls: Path, roster: Path, *extra: str) -> dict:
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--question",
                       "softmax", "--jobs", "1", "--roster", str(roster), "--due", DUE, *extra)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    return {"stdout": r.stdout,
            "rows": {row["student"]: row for row in
                     csv.DictReader((out / "grades.csv").open(encoding="utf-8"))},
            "json": {s["student"]: s for s in
                     json.loads((out / "grades.json").read_text())["submissions"]},
            "report": (out / "report.html").read_text(),
            "feedback": {p.name: p.read_text() for p in (out / "feedback").iterdir()}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("term-outputs")
    cls = root / "class"
    starter = (TEMPLATE, "2026-11-20T10:00:00Z")          # what Classroom commits first
    make_repo(cls, "hw1-ann", [starter, (CORRECT, "2026-12-01T20:00:00+01:00")])   # on time
    # all work 20 h after the due time: one started day late
    make_repo(cls, "hw1-bob", [starter, (CORRECT, "2026-12-02T20:00:00+01:00")])
    make_repo(cls, "hw1-carl", [(WRONG, "2026-12-01T10:00:00Z")])   # on time, NaN in softmax
    make_repo(cls, "hw1-cy", [starter])                    # the template and nothing later
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name\n1,ann,Ann\n2,bob,Bob\n3,carl,Carl\n"
                      "4,cy,Cy\n5,dee,Dee\n")                 # Dee has no folder
    out = root / "out"
    return {"due": _run(out, cls, roster),
            "late": _run(out, cls, roster, "--late-policy", "10%/day,max=50%"),
            "out": out}


def _terminal_row(stdout: str, name: str) -> list[str]:
    return next(line for line in stdout.splitlines() if line.startswith(name)).split()


def _section(report: str, heading: str) -> str:
    """The report from `heading` to the next heading."""
    return report.split(heading, 1)[1].split("<h2", 1)[0]


def _student_row(report: str, name: str) -> str:
    return next(row for row in _section(report, "<h2>Students</h2>").split("<tr")
                if f"<td>{name}" in row)


# ------------------------------------------------------------------ 1. late penalties

def test_the_late_penalty_is_in_the_terminal_table(runs):
    stdout = runs["late"]["stdout"]
    assert "days late  adjusted" in stdout.splitlines()[0]
    assert _terminal_row(stdout, "hw1-bob")[-3:] == [f"{S}/{S}", "1", LATE]
    assert _terminal_row(stdout, "hw1-ann")[-3:] == [f"{S}/{S}", "0", S]
    assert "adjusted: the total less 10 % per day late (a started day counts), at most 50 %" \
        in stdout
    assert "days late" not in runs["due"]["stdout"]      # no policy, no column


def test_the_late_penalty_is_in_the_feedback(runs):
    feedback = runs["late"]["feedback"]
    assert f"**Total: {LATE} / {S} ({S} less 10 % for 1 day late)**" in feedback["bob.md"]
    assert f"Total: <b>{LATE} / {S} ({S} less 10 % for 1 day late)</b>" in feedback["bob.html"]
    assert f"**Total: {S} / {S}**" in feedback["ann.md"]
    assert runs["late"]["rows"]["hw1-bob"]["adjusted_total"] == LATE      # what the LMS gets


def test_the_report_counts_the_adjusted_totals(runs):
    report = runs["late"]["report"]
    bob = _student_row(report, "hw1-bob")
    assert re.search(rf'<td class="num">{S}/{S}</td>\s*<td class="num">1</td>'
                     rf'<td class="num"><b>{re.escape(LATE)}</b>/{S}</td>', bob)
    # The mean of the totals that count, the missing student left out: ann's full marks, bob's
    # a day late, carl's (NaN in one case) and cy's 0, over 4.
    carl = float(runs["late"]["rows"]["hw1-carl"]["adjusted_total"])
    mean = (float(S) + float(LATE) + carl + 0) / 4
    assert re.search(rf"mean adjusted total<b>{mean:.1f}</b>", report), mean
    rule = re.search(r'id="statistics-rule">([^<]*)<', report).group(1)
    assert "use the adjusted total (the total less 10 % per day late" in rule
    assert "The 1 missing student (no submission) is not counted in any statistic" in rule
    assert "use the total." in re.search(r'id="statistics-rule">([^<]*)<',
                                         runs["due"]["report"]).group(1)


# ------------------------------------------------------------------ 4. missing, not error

def test_a_missing_roster_student_is_missing_everywhere(runs):
    for run in (runs["due"], runs["late"]):
        assert _terminal_row(run["stdout"], "Dee")[1:3] == ["missing", f"0/{S}"]
        row = run["rows"]["Dee"]
        assert (row["status"], row["file"]) == ("missing", "")
        data = run["json"]["Dee"]
        assert data["status"] == "missing" and data["path"] == ""
        assert data["questions"]["softmax"]["status"] == "missing"
        assert {c["status"] for c in data["questions"]["softmax"]["cases"]} == {"missing"}
        assert f"## softmax: 0 / {S} (missing)" in run["feedback"]["dee.md"]
        assert "(error)" not in run["feedback"]["dee.md"]
        report = run["report"]
        assert "error: " not in _section(report, "<h2>Questions</h2>")
        missing = _section(report, '<h2 id="missing">')
        assert "<td>Dee</td>" in missing
        problems = _section(report, "errored, timed out")
        assert "Dee" not in problems
        assert "(missing)" in _student_row(report, "Dee")
    from autograder.model.status import QuestionStatus, question_status

    assert question_status(["missing"], 0.0) == QuestionStatus.MISSING


# ------------------------------------------------------------------ 5. work only after the due time

def test_work_only_after_the_due_time_is_missing_not_attempted(runs):
    run = runs["due"]
    bob = run["rows"]["hw1-bob"]
    assert bob["status"] == "missing" and bob["later_commits"] == "1"
    assert bob["error"] == ("nothing of yours before the due date (the commits before it hold "
                            "only the template); 1 later commit (the latest 20 h late)")
    assert float(bob["total"]) == 0 and bob["adjusted_total"] == "0"
    assert run["json"]["hw1-bob"]["later_commits"] == 1
    assert _terminal_row(run["stdout"], "hw1-bob")[1:3] == ["missing", f"0/{S}"]
    assert "<td>hw1-bob</td>" in _section(run["report"], '<h2 id="missing">')
    # The template with nothing after it is not a missing submission: it was not attempted.
    cy = run["rows"]["hw1-cy"]
    assert cy["status"] == "graded" and cy["later_commits"] == "0"
    assert run["json"]["hw1-cy"]["questions"]["softmax"]["status"] == "not attempted"


# ------------------------------------------------------------------ 8. the report reads well

def test_report_links_readable_feedback_pages(runs):
    out, report = runs["out"], runs["late"]["report"]
    links = re.findall(r'href="(feedback/[^"]+)"', report)
    assert "feedback/carl.html" in links and "feedback/carl.md" in links
    assert all((out / link).is_file() for link in links)
    page, markdown = runs["late"]["feedback"]["carl.html"], runs["late"]["feedback"]["carl.md"]
    assert r"softmax(\[1, 2, 3\])" in markdown                 # Markdown escaping stays in .md
    assert "lesson: softmax([1, 2, 3])" in page and "\\[" not in page and "\\_" not in page
    assert "NaN" in page and "likely mistake" in page          # the same content as the .md


def test_common_problems_are_in_words(runs):
    questions = _section(runs["late"]["report"], "<h2>Questions</h2>")
    assert "NaN or inf in the output (1)" in questions
    assert not re.search(r"\b(nan|not_attempted|values) \(\d", questions)


def test_no_emoji_in_the_html_pages(runs):
    pages = {name: text for name, text in runs["late"]["feedback"].items()
             if name.endswith(".html")}
    assert len(pages) == 5
    for text in [runs["late"]["report"], *pages.values()]:
        assert not EMOJI.search(text)
    assert '<span class="mark fail">fail</span>' in pages["carl.html"]
    assert "✅" in runs["late"]["feedback"]["ann.md"]          # the Markdown files keep theirs
