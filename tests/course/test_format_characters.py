"""Unicode format characters (category Cf: the right-to-left override, isolates, marks, zero-width
spaces and joiners, the byte order mark, tags) reorder or hide the text around them and show
nothing themselves: a folder shown as `attention-alice` need not be alice's. In every output a
student's name, message, quoted code and written answer show each of them as a code,
`<U+202E>`, and never raw; an honest student's Persian, Hebrew, Chinese and emoji keep their
joiners and show as written. JSON files are data: they keep the exact text, written as ASCII
(`\\u202e`), so they show nothing raw either.

Two runs: the hostile class graded once for every renderer's test (tests/hostile_names.py: the
terminal, grades.csv, grades.json, report.html, the feedback files), and here a class of git
clones with a roster, graded with `--similarity --deliver` (gradebook.csv, similarity.html,
the Feedback pull request comments, the mail-merge file, the committed FEEDBACK.md).
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
import unicodedata

import pytest

from helpers import SUBMISSIONS, cli_in_process, git
from hostile_names import (FORMAT_ANSWER, FORMAT_ANSWER_SHOWN, FORMAT_FOLDER,
                           FORMAT_FOLDER_SHOWN, FORMAT_FORGER, FORMAT_MESSAGE_SHOWN, FORMAT_META,
                           FORMAT_META_SHOWN, FORMAT_RAW, WORLD_ANSWER, WORLD_FOLDER,
                           answer_source)

# A Trojan Source line: a comment whose override makes the code around it read otherwise.
TROJAN = "    # \u202e } return x \u2066 checked \u2069\n"
TROJAN_SHOWN = "# <U+202E> } return x <U+2066> checked <U+2069>"
HONEST = (SUBMISSIONS / "correct" / "reference_style.py").read_text()


def format_characters(text: str) -> list[str]:
    """The format characters in `text`, but those of the honest answer (written as is)."""
    return [f"U+{ord(c):04X}" for c in text.replace(WORLD_ANSWER, "")
            if unicodedata.category(c) == "Cf"]


def _md(text: str) -> str:
    """A code as a Markdown file holds it (`<` and `>` as entities)."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


# ------------------------------------------------------------------ the hostile class

def test_the_terminal_shows_codes(hostile_names):
    stdout = hostile_names["stdout"]        # `grade --out --feedback`, run once
    assert not format_characters(stdout)
    rows = [line.split("  ")[0].strip() for line in stdout.splitlines()]
    assert FORMAT_FOLDER_SHOWN in rows and FORMAT_META_SHOWN in rows and WORLD_FOLDER in rows
    assert f"softmax raised ValueError: {FORMAT_MESSAGE_SHOWN} (line" in stdout


def test_grades_csv_shows_codes_and_grades_json_keeps_the_data(hostile_names):
    out = hostile_names["out"]
    text = (out / "grades.csv").read_text(encoding="utf-8")
    assert not format_characters(text)
    students = [row[0] for row in csv.reader(io.StringIO(text, newline=""))]
    assert {FORMAT_FOLDER_SHOWN, FORMAT_META_SHOWN, WORLD_FOLDER} <= set(students)
    # grades.json is data: the exact names and answers, written as ASCII escapes.
    raw = (out / "grades.json").read_bytes()
    assert raw.isascii()
    rows = {s["student"]: s for s in json.loads(raw)["submissions"]}
    assert {FORMAT_FOLDER, *FORMAT_META.values(), WORLD_FOLDER} <= set(rows)
    assert rows[FORMAT_FORGER]["questions"]["why_scale"]["answer"] == FORMAT_ANSWER
    assert rows[WORLD_FOLDER]["questions"]["why_scale"]["answer"] == WORLD_ANSWER


def test_report_html_shows_codes(hostile_names):
    html = (hostile_names["out"] / "report.html").read_text(encoding="utf-8")
    assert not format_characters(html)
    for shown in (FORMAT_FOLDER_SHOWN, FORMAT_META_SHOWN):
        assert f"<td>{_md(shown)}</td>" in html
    assert f"<td>{WORLD_FOLDER}</td>" in html


def test_feedback_files_show_codes_and_honest_writing_as_written(hostile_names):
    feedback = hostile_names["out"] / "feedback"
    pages = {p.name: p.read_text(encoding="utf-8") for p in sorted(feedback.iterdir())}
    for name, text in pages.items():
        assert not format_characters(text), name
    md, html = pages[f"{FORMAT_FORGER}.md"], pages[f"{FORMAT_FORGER}.html"]
    for text in (md, html):
        assert _md(FORMAT_MESSAGE_SHOWN) in text
        assert _md(FORMAT_ANSWER_SHOWN) in text
    shown = "\n".join(pages.values())
    assert f"feedback for {_md(FORMAT_FOLDER_SHOWN)}" in shown
    assert f"feedback for {_md(FORMAT_META_SHOWN)}" in shown
    world = [t for n, t in pages.items() if WORLD_ANSWER in t]
    assert len(world) == 2 and all("U+" not in t and WORLD_FOLDER in t for t in world)


# ------------------------------------------------------------------ a class of clones

@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    """Clones named by Classroom 50, one by a folder with an override; a roster whose name
    and email cells hold format characters; graded with the similarity report and delivery."""
    root = tmp_path_factory.mktemp("format-clones")
    cls = root / "class"
    sources = {"attention-alice": HONEST,
               FORMAT_FOLDER: HONEST.replace("\n\n", "\n\n" + TROJAN, 1)
               + f"\nwhy_scale = {FORMAT_ANSWER!r}\n",
               "attention-cy": answer_source(WORLD_ANSWER)}
    for name, source in sources.items():
        repo = cls / name
        repo.mkdir(parents=True)
        (repo / "attention.py").write_text(source, encoding="utf-8")
        git(repo, "init", "-q")
        git(repo, "add", "attention.py")
        git(repo, "commit", "-q", "-m", "work", date="2026-12-01T20:00:00+01:00")
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name,email\n"
                      "1,alice,Alice,alice@example.edu\n"
                      "2,cy,C\u202ey,cy\u200b@example.edu\n", encoding="utf-8")
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--roster",
                       str(roster), "--similarity", "--deliver", "--jobs", "1", "--question",
                       "softmax", "--question", "why_scale")
    assert r.returncode in (0, 4), r.stdout + r.stderr[-3000:]
    return {"cls": cls, "out": out, "stdout": r.stdout, "stderr": r.stderr}


def test_the_class_run_prints_codes(clones):
    assert not format_characters(clones["stdout"] + clones["stderr"])
    assert f"matched no one in the roster: {FORMAT_FOLDER_SHOWN}" in clones["stdout"]


def test_gradebook_and_mail_merge_show_codes(clones):
    out = clones["out"]
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8")
    mail = (out / "mail-merge.csv").read_text(encoding="utf-8")
    assert not format_characters(gradebook) and not format_characters(mail)
    assert "C<U+202E>y" in gradebook and "cy<U+200B>@example.edu" in mail


def test_similarity_report_shows_codes_in_names_and_code(clones):
    out = clones["out"]
    html = (out / "similarity.html").read_text(encoding="utf-8")
    assert not format_characters(html)
    assert _md(FORMAT_FOLDER_SHOWN) in html and _md(TROJAN_SHOWN) in html
    assert (out / "similarity.json").read_bytes().isascii()


def test_delivered_feedback_shows_codes(clones):
    cls, out = clones["cls"], clones["out"]
    comments = {p.name: p.read_text(encoding="utf-8")
                for p in sorted((out / "feedback-pr").iterdir())}
    assert len(comments) == 3
    for name, text in comments.items():
        assert not format_characters(text), name
    committed = subprocess.run(["git", "show", "feedback:FEEDBACK.md"], cwd=cls / FORMAT_FOLDER,
                               capture_output=True, check=True).stdout.decode()
    assert not format_characters(committed)
    assert _md(FORMAT_ANSWER_SHOWN) in committed and f"for {_md(FORMAT_FOLDER_SHOWN)}" in committed
    world = subprocess.run(["git", "show", "feedback:FEEDBACK.md"], cwd=cls / "attention-cy",
                           capture_output=True, check=True).stdout.decode()
    assert WORLD_ANSWER in world and "U+" not in world


def test_no_raw_hostile_character_anywhere_in_the_results_folder(clones, hostile_names):
    """Every file of both runs, whatever it is: the hostile texts' characters never raw."""
    for out in (clones["out"], hostile_names["out"]):
        for path in sorted(out.rglob("*")):
            if path.is_file() and path.suffix in (".csv", ".json", ".md", ".html", ".txt"):
                text = path.read_text(encoding="utf-8")
                assert not set(text) & FORMAT_RAW, path
