"""No submission can cost a class its results: forged worker replies end only their own
submission (flagged for review), a fault of the grader on one submission becomes that
submission's row, and every student gets a row in grades.csv, grades.json and report.html,
in parallel grading processes as in the one-process (`--jobs 1`) path."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, SUBMISSIONS, WRITTEN, autograded,
                     cli_in_process)

HOSTILE = SUBMISSIONS / "hostile"
FORGED = sorted(p.name for p in HOSTILE.glob("forged_reply_*.py"))
HONEST = ["zz_honest_a.py", "zz_honest_b.py"]
MALFORMED = "the grading process of this submission sent a malformed reply"
# What each forgery is refused for (the detail in its row).
DETAIL = {
    "forged_reply_bad_floats.py": "bad float",
    "forged_reply_malformed_types.py": "mutated is not a list of names",
    "forged_reply_non_string_params.py": "parameters that are not a list of names",
    "forged_reply_shared_buffer.py": "buffer referenced twice",
    "forged_reply_trusted_side_exception.py": "inline array data in a message",
}


def make_class(folder: Path) -> list[str]:
    folder.mkdir()
    for name in FORGED:
        shutil.copy(HOSTILE / name, folder / name)
    honest = sorted((SUBMISSIONS / "correct").glob("*.py"))
    for name, src in zip(HONEST, honest):
        shutil.copy(src, folder / name)
    return sorted(p.name for p in folder.iterdir())


def test_every_reply_class_has_its_file():
    assert sorted(DETAIL) == FORGED


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("replies")
    names = make_class(root / "class")
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(root / "class"), "--out", str(out),
                       "--jobs", "2", cwd=root)
    return {"proc": r, "out": out, "names": names}


def rows_by_file(data: dict) -> dict[str, dict]:
    return {Path(s["path"]).name: s for s in data["submissions"]}


def test_the_class_run_finishes_with_every_report(batch):
    r = batch["proc"]
    # Every row got its grade; the forged replies are flagged for the instructor (status 4).
    assert r.returncode == 4, r.stderr[-3000:]
    assert f"{len(FORGED)} row(s) need you" in r.stderr
    for f in ("grades.csv", "grades.json", "report.html"):
        assert (batch["out"] / f).is_file(), f
    feedback = batch["out"] / "feedback"
    assert len(list(feedback.glob("*.md"))) == len(list(feedback.glob("*.html"))) == \
        len(batch["names"])


def test_every_submission_has_its_row_everywhere(batch):
    out = batch["out"]
    data = json.loads((out / "grades.json").read_text())
    assert sorted(rows_by_file(data)) == batch["names"]
    with open(out / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(Path(r["file"]).name for r in rows) == batch["names"]
    html = (out / "report.html").read_text()
    for name in batch["names"]:
        assert Path(name).stem in html, name


@pytest.mark.parametrize("name", FORGED)
def test_a_forged_reply_ends_only_its_submission_flagged_for_review(batch, name):
    """The forgers patch the worker's channel through sys.modules. The engine's modules are no
    longer there when student code runs, so the forgery never reaches the channel (malformed
    replies themselves: tests/sandbox/test_hostile_replies.py); the store into the engine that
    the source scan proves costs every question, and the batch goes on."""
    out = batch["out"]
    sub = rows_by_file(json.loads((out / "grades.json").read_text()))[name]
    assert sub["score"] == 0 and sub["max_score"] == MAX_SCORE
    assert list(autograded(sub["questions"])) == QUESTIONS
    assert list(sub["questions"])[len(QUESTIONS):] == WRITTEN
    assert sub["integrity"] and sub["integrity_review"]["evidence"] == "hard"
    assert sub["notes"][0].startswith("integrity: this submission modifies the grader")
    for q in autograded(sub["questions"]).values():
        assert q["status"] == "integrity" and q["score"] == 0
        assert {c["status"] for c in q["cases"]} == {"integrity"}
    with open(out / "grades.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if Path(r["file"]).name == name)
    assert row["status"] == "integrity" and row["total"] == "0"
    feedback = (out / "feedback" / f"{Path(name).stem}.md").read_text()
    assert "flagged for review" in feedback


def test_honest_submissions_in_the_same_batch_keep_full_marks(batch):
    rows = rows_by_file(json.loads((batch["out"] / "grades.json").read_text()))
    for name in HONEST:
        assert rows[name]["score"] == AUTOGRADED_MAX, rows[name]
        assert rows[name]["max_score"] == MAX_SCORE, rows[name]
        assert rows[name]["error"] is None and not rows[name].get("notes")


# ------------------------------------------------------------------ faults of the grader itself

@pytest.fixture()
def small_class(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    correct = sorted((SUBMISSIONS / "correct").glob("*.py"))
    for name, src in zip(["a_first.py", "b_explodes.py", "c_after.py"], correct):
        shutil.copy(src, folder / name)
    shutil.copy(HOSTILE / "forged_reply_bad_floats.py", folder / "d_forged.py")
    return folder


def grade_in_process(assignment, folder: Path, out: Path):
    from autograder.course.batch import grade_class
    from autograder.course.classlist import discover
    from autograder.course.report import write_reports

    graded = grade_class(assignment, discover([str(folder)], assignment.student_file), out=out,
                         jobs=1, sandbox_level="auto", limits=assignment.limits,
                         progress=False)
    results = [g.result for g in graded]
    write_reports(out, assignment, results)
    return {Path(r.path).name: r for r in results}, graded


def test_a_fault_of_the_grader_becomes_that_submissions_row(assignment, small_class, tmp_path,
                                                             monkeypatch, capsys):
    """A bug of the trusted code on one submission (here: the question runner raising for
    one file) gives that submission an internal-error row; the next ones are graded, in the
    same one-process run, with a fresh sandbox."""
    import autograder.grading.grade as grade_module

    real = grade_module.grade_functions

    def faulty(assignment, path, *args, **kwargs):
        if "b_explodes" in path:
            raise RuntimeError("a bug in the trusted code")
        return real(assignment, path, *args, **kwargs)

    monkeypatch.setattr(grade_module, "grade_functions", faulty)
    out = tmp_path / "out"
    rows, _ = grade_in_process(assignment, small_class, out)
    assert sorted(rows) == ["a_first.py", "b_explodes.py", "c_after.py", "d_forged.py"]
    for name in ("a_first.py", "c_after.py"):
        assert rows[name].score == AUTOGRADED_MAX and rows[name].error is None
    broken = rows["b_explodes.py"]
    assert broken.score == 0 and list(broken.questions) == QUESTIONS
    assert {c.status for q in broken.questions.values() for c in q.cases} == {"internal_error"}
    assert {q.status for q in broken.questions.values()} == {"internal error"}
    assert broken.error.startswith("the grader failed on this submission (RuntimeError: a bug "
                                   "in the trusted code)")
    assert "the instructor should look" in broken.error
    # The forger's store into the engine is proven by the scan (it no longer reaches the
    # worker's channel, which is out of sys.modules): no points, flagged.
    assert rows["d_forged.py"].score == 0 and rows["d_forged.py"].integrity
    assert "internal error while grading" in capsys.readouterr().err
    with open(out / "grades.csv", newline="") as f:
        csv_rows = {Path(r["file"]).name: r for r in csv.DictReader(f)}
    assert csv_rows["b_explodes.py"]["status"] == "error"
    assert "the grader failed on this submission" in csv_rows["b_explodes.py"]["error"]
    assert "b_explodes" in (out / "report.html").read_text()

    # An internal error is not cached: once the grader is fixed, the next run grades it.
    monkeypatch.setattr(grade_module, "grade_functions", real)
    rows, graded = grade_in_process(assignment, small_class, out)
    assert rows["b_explodes.py"].score == AUTOGRADED_MAX
    cached = {Path(g.result.path).name: g.cached for g in graded}
    assert cached == {"a_first.py": True, "b_explodes.py": False, "c_after.py": True,
                      "d_forged.py": True}


def test_a_fault_outside_the_grading_of_one_submission_is_still_its_row(
        assignment, small_class, tmp_path, monkeypatch):
    """Even what `grade_submission` itself lets through (here: it raises for one file) becomes
    that submission's row in a class run."""
    import autograder.grading.grade as grade_module

    real = grade_module.grade_submission

    def faulty(assignment, path, *args, **kwargs):
        if "b_explodes" in str(path):
            raise KeyError("no such thing")
        return real(assignment, path, *args, **kwargs)

    monkeypatch.setattr(grade_module, "grade_submission", faulty)
    rows, _ = grade_in_process(assignment, small_class, tmp_path / "out")
    assert sorted(rows) == ["a_first.py", "b_explodes.py", "c_after.py", "d_forged.py"]
    assert rows["a_first.py"].score == rows["c_after.py"].score == AUTOGRADED_MAX
    assert rows["b_explodes.py"].error.startswith("the grader failed on this submission "
                                                  "(KeyError")


def test_the_default_number_of_grading_processes_follows_the_class():
    """One grading process per core, but a small class (or a rerun with a few left to grade)
    is graded by one: each process costs two starts of torch, more than it saves below about
    forty submissions (the measurement is in `batch.SUBMISSIONS_PER_PROCESS`'s comment)."""
    from autograder.course.batch import SUBMISSIONS_PER_PROCESS, auto_jobs

    assert auto_jobs(0, cores=2) == auto_jobs(1, cores=2) == 1
    assert auto_jobs(SUBMISSIONS_PER_PROCESS, cores=2) == 1
    assert auto_jobs(SUBMISSIONS_PER_PROCESS + 1, cores=2) == 2
    assert auto_jobs(200, cores=2) == 2
    assert auto_jobs(200, cores=8) == 200 // SUBMISSIONS_PER_PROCESS
    assert auto_jobs(10_000, cores=8) == 8
