"""Hostile files in a class folder, graded in one batch beside honest students.

Each entry is something a Classroom repository or a class folder can carry (`git clone`
recreates links): links into the reference or to devices, a FIFO, a sparse GiB, a folder in
place of the file, a student folder that is a link, notebooks that break parsers. The batch
finishes, everyone has a row with the exact outcome, honest students keep full marks, and no
secret is quoted anywhere.
"""
import json
import os
from pathlib import Path

import pytest

from helpers import (QUESTIONS, ROOT, SUBMISSIONS, WRITTEN_MAX, autograded, cli_in_process,
                     run_cli)

from autograder.course.classlist import LINKED_FOLDER

SECRET = "grader-only-secret-5123"
HONEST = {"alice": SUBMISSIONS / "correct" / "einsum_style.py",
          "carol": SUBMISSIONS / "correct" / "logsumexp_style.py"}

# student: words every question's message (and the row's error) must contain; score 0.
EXPECTED = {
    "ref_link_relative": "symbolic link",
    "ref_link_absolute": "symbolic link",
    "gradescope_source_link": "symbolic link",
    "dev_zero_link": "symbolic link",
    "dev_stdin_link": "symbolic link",
    "secret_link": "symbolic link",
    "fifo": "named pipe",
    "sparse_gib": "larger than 2 MB",
    "folder_named_like_the_file": "no attention.py or notebook found",
    "linked_student_folder": LINKED_FOLDER,
    "binary": "not UTF-8",
    "secret_text": "not Python source",
    "notebook_deep_nesting": "nested too deeply",
    "notebook_huge_integer": "too many digits",
    "notebook_wrong_types": "not a Jupyter notebook",
}


def make_hostile_class(root: Path) -> Path:
    cls = root / "class"
    cls.mkdir()
    secret = root / "secret.txt"
    secret.write_text(f"{SECRET}\n")

    def student(name: str) -> Path:
        (cls / name).mkdir()
        return cls / name

    for name, src in HONEST.items():
        (student(name) / "attention.py").write_bytes(src.read_bytes())
    reference = ROOT / "reference" / "attention.py"
    rel = os.path.relpath(reference, cls / "ref_link_relative")
    (student("ref_link_relative") / "attention.py").symlink_to(rel)
    (student("ref_link_absolute") / "attention.py").symlink_to(reference)
    (student("gradescope_source_link") / "attention.py").symlink_to(
        "/autograder/source/assignments/attention/reference/attention.py")
    (student("dev_zero_link") / "attention.py").symlink_to("/dev/zero")
    (student("dev_stdin_link") / "attention.py").symlink_to("/dev/stdin")
    (student("secret_link") / "attention.py").symlink_to(secret)
    os.mkfifo(student("fifo") / "attention.py")
    with open(student("sparse_gib") / "attention.py", "wb") as f:
        f.truncate(2**30)
    (student("folder_named_like_the_file") / "attention.py").mkdir()
    (cls / "linked_student_folder").symlink_to(cls / "alice")
    (student("binary") / "attention.py").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" + SECRET.encode())
    (student("secret_text") / "attention.py").write_text(f"the grader key is {SECRET}\n")
    (student("notebook_deep_nesting") / "attention.ipynb").write_text(
        '{"cells": ' + "[" * 200_000 + "]" * 200_000 + "}")
    (student("notebook_huge_integer") / "attention.ipynb").write_text(
        '{"cells": [], "metadata": {"n": ' + "7" * 50_000 + "}}")
    (student("notebook_wrong_types") / "attention.ipynb").write_text(
        json.dumps({"cells": {"0": "x"}, "metadata": [], "nbformat": "four"}))
    return cls


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile_files")
    cls = make_hostile_class(root)
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "2",
                       "--public-only")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {s["student"]: s for s in json.loads((out / "grades.json").read_text())["submissions"]}
    return {"root": root, "out": out, "proc": r, "rows": rows}


def test_every_student_has_exactly_one_row(batch):
    assert sorted(batch["rows"]) == sorted(list(HONEST) + list(EXPECTED))
    csv_lines = (batch["out"] / "grades.csv").read_text().strip().splitlines()
    assert len(csv_lines) == 1 + len(HONEST) + len(EXPECTED)
    assert "report" in (batch["out"] / "report.html").read_text().lower()


def test_honest_students_keep_full_marks(batch):
    for name in HONEST:
        row = batch["rows"][name]
        # Every public case's points; the written questions (unanswered) are in the maximum.
        assert row["score"] == row["max_score"] - WRITTEN_MAX > 0, row["error"]
        assert all(q["status"] == "passed" for q in autograded(row["questions"]).values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_hostile_entry_gets_zero_with_its_reason(batch, name):
    row = batch["rows"][name]
    words = EXPECTED[name]
    assert row["score"] == 0
    assert words in (row["error"] or ""), row["error"]
    for qid in QUESTIONS:
        q = row["questions"][qid]
        assert q["status"] == "error" and q["score"] == 0
        assert all(words in c["message"] for c in q["cases"])


def test_no_secret_and_no_reference_line_is_quoted_anywhere(batch):
    reference = (ROOT / "reference" / "attention.py").read_text()
    distinctive = [line.strip() for line in reference.splitlines()
                   if len(line.strip()) > 40 and not line.strip().startswith(("#", '"""'))]
    for f in batch["out"].rglob("*"):
        if f.is_file() and ".cache" not in f.parts:
            text = f.read_text(errors="replace")
            assert SECRET not in text, f
            assert not [line for line in distinctive if line in text], f
    assert SECRET not in batch["proc"].stdout + batch["proc"].stderr


def test_a_rerun_reuses_the_rows_without_reading_special_files(batch):
    r = cli_in_process("grade", "-a", "attention", str(batch["root"] / "class"), "--out",
                       str(batch["out"]), "--public-only")
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{len(HONEST) + len(EXPECTED) - 2} of" in r.stdout   # two have no file at all


def test_grade_files_and_check_refuse_a_link_given_by_name(tmp_path):
    link = tmp_path / "attention.py"
    link.symlink_to(ROOT / "reference" / "attention.py")
    out = tmp_path / "g.json"
    r = cli_in_process("grade", "-a", "attention", str(link), "--json", str(out),
                       "--public-only")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(out.read_text())["submissions"]
    assert row["score"] == 0 and "symbolic link" in row["error"]
    c = run_cli("check", "-a", "attention", str(link))
    assert c.returncode == 1 and "symbolic link" in c.stdout
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    c = run_cli("check", "-a", "attention", str(fifo), timeout=60)
    assert c.returncode == 1 and "named pipe" in c.stdout


def test_gradescope_refuses_a_linked_submission(tmp_path):
    from autograder.platforms.gradescope.run import run

    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    (root / "submission" / "attention.py").symlink_to(ROOT / "reference" / "attention.py")
    results = run(root, "attention")
    assert results["score"] == 0 and "symbolic link" in results["output"]
    assert [t["name"] for t in results["tests"]] == QUESTIONS
    written = json.loads((root / "results" / "results.json").read_text())
    assert written["score"] == 0
