"""The instructor's term: a roster joined with Classroom folders, the LMS gradebook file, and
due dates read from real git repositories made here (commits before and after the due time,
in several time zones)."""
import csv
import json
import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, cli_in_process, git, make_repo, max_points

from autograder.course import git_history
from autograder.course.classlist import Student, discover
from autograder.course.gradebook import LatePolicy
from autograder.course.roster import AMBIGUOUS, Member, class_prefix, join, load_roster

CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"
SOFTMAX = max_points("softmax")     # these runs grade the softmax question only
TEMPLATE = ROOT / "student_template" / "attention.py"
DUE = "2026-12-01T23:59:00+01:00"


def commit(repo: Path, source: Path, date: str, message: str = "work") -> str:
    shutil.copy(source, repo / "attention.py")
    git(repo, "add", "attention.py")
    git(repo, "commit", "-q", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


# ------------------------------------------------------------------ roster, no grading

def test_roster_csv_join(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("identifier,github_username,github_id,name\n"
                      "ann@uni.edu,Ann-Lee,1,Ann Lee\n"
                      "n@uni.edu,n,2,\n"
                      "=cmd|' /C calc'!A0,eve,3,Eve\n"
                      "ghost@uni.edu,ghost,4,Ghost\n")
    members = load_roster(roster)
    assert [m.identifier for m in members][:2] == ["ann@uni.edu", "n@uni.edu"]
    students = [Student(n, tmp_path / n, tmp_path / n / "attention.py")
                for n in ("hw1-ann-lee", "hw1-n", "hw1-EVE", "hw1-stranger")]
    joined = join(members, students)
    by_ident = {m.identifier if m else None: s.name for m, s in joined.rows}
    assert by_ident["ann@uni.edu"] == "hw1-ann-lee"       # the exact name, case-insensitive
    assert by_ident["n@uni.edu"] == "hw1-n"
    assert [s.name for s in joined.unmatched] == ["hw1-stranger"]
    assert [m.identifier for m in joined.missing] == ["ghost@uni.edu"]
    ghost = next(s for m, s in joined.rows if m and m.identifier == "ghost@uni.edu")
    assert ghost.file is None and ghost.problem.startswith("missing:")


def test_roster_needs_its_columns(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("email,login\na@b,c\n")
    with pytest.raises(ValueError, match="identifier.*github_username"):
        load_roster(roster)


def test_gradescope_metadata_is_a_roster(tmp_path):
    export = tmp_path / "export"
    for sub in ("submission_1", "submission_2"):
        (export / sub).mkdir(parents=True)
        shutil.copy(CORRECT, export / sub / "attention.py")
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ann\n    :sid: '1001'\n    :email: a@x\n"
        "submission_2:\n  :submitters:\n  - :name: Bo\n    :email: bo@x\n")
    members = load_roster(export)
    assert [(m.identifier, m.name) for m in members] == [("1001", "Ann"), ("bo@x", "Bo")]
    joined = join(members, discover([str(export)], "attention.py"))
    assert not joined.unmatched and not joined.missing
    assert [m.identifier for m, _ in joined.rows] == ["1001", "bo@x"]


def _rows(joined) -> dict:
    return {m.identifier if m else None: s for m, s in joined.rows}


def test_the_longest_shared_prefix_decides_between_two_students(tmp_path):
    """`hw` and `hw-1` are carried by every folder: the longer is the class's, so `hw-1-ann`
    is Ann's, not the folder of roster student `1-ann` (who has none)."""
    names = ("hw-1-ann", "hw-1-bo")
    assert class_prefix(names) == "hw-1"
    members = [Member("ann@uni.edu", "ann"), Member("one@uni.edu", "1-ann"),
               Member("bo@uni.edu", "bo")]
    joined = join(members, [Student(n, tmp_path / n, tmp_path / n / "attention.py")
                            for n in names])
    rows = _rows(joined)
    assert rows["ann@uni.edu"].name == "hw-1-ann" and rows["bo@uni.edu"].name == "hw-1-bo"
    assert rows["one@uni.edu"].problem.startswith("missing:")
    assert not joined.unmatched and not joined.contested


def _claimed_twice(joined, identifier: str, folders: list[str]) -> None:
    """Neither claimant is chosen: the roster row says so, each is graded on a row of its own."""
    row = _rows(joined)[identifier]
    assert row.file is None and row.problem.startswith(f"{AMBIGUOUS}: 2 submissions claim")
    assert all(f in row.problem for f in folders)
    claimants = sorted(s.folder.name for m, s in joined.rows if m is None and s.file is not None)
    assert claimants == sorted(folders)
    assert [(m.identifier, sorted(s.folder.name for s in c)) for m, c in joined.contested] == [
        (identifier, sorted(folders))]


def test_two_case_variants_of_a_folder_claim_one_student(tmp_path):
    names = ("attention-Alice", "attention-alice", "attention-bob")
    joined = join([Member("a@uni.edu", "alice"), Member("b@uni.edu", "bob")],
                  [Student(n, tmp_path / n, tmp_path / n / "attention.py") for n in names])
    _claimed_twice(joined, "a@uni.edu", ["attention-Alice", "attention-alice"])
    assert _rows(joined)["b@uni.edu"].name == "attention-bob"


def test_a_student_in_two_gradescope_submissions_is_not_given_either(tmp_path):
    export = tmp_path / "export"
    for sub in ("submission_1", "submission_2", "submission_3"):
        (export / sub).mkdir(parents=True)
        shutil.copy(CORRECT, export / sub / "attention.py")
    (export / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ann\n    :sid: '1001'\n"
        "submission_2:\n  :submitters:\n  - :name: Bo\n    :sid: '1002'\n"
        "submission_3:\n  :submitters:\n  - :name: Ann\n    :sid: '1001'\n")
    members = load_roster(export)
    assert [(m.identifier, m.submissions) for m in members] == [
        ("1001", ["submission_1", "submission_3"]), ("1002", ["submission_2"])]
    joined = join(members, discover([str(export)], "attention.py"))
    _claimed_twice(joined, "1001", ["submission_1", "submission_3"])
    assert _rows(joined)["1002"].folder.name == "submission_2"


def test_late_policy():
    p = LatePolicy.parse("10%/day,max=25%")
    assert (p.deduction(1), p.deduction(2), p.deduction(9)) == (0.1, 0.2, 0.25)
    assert LatePolicy.parse("5/day").cap == 100
    for bad in ("10%", "150%/day", "ten/day"):
        with pytest.raises(ValueError):
            LatePolicy.parse(bad)
    assert git_history.days_late(timedelta(minutes=1)) == 1
    assert git_history.days_late(timedelta(hours=24, seconds=1)) == 2


# ------------------------------------------------------------------ git history, no grading

def test_due_version_in_time_zones(tmp_path):
    due = git_history.parse_due(DUE)   # 22:59 UTC
    # 23:30 at +01:00 is 22:30 UTC (on time); 18:30 at -05:00 is 23:30 UTC (late), though its
    # wall-clock time looks earlier.
    repo = make_repo(tmp_path, "r", [(TEMPLATE, "2026-12-01T10:00:00+00:00"),
                                     (CORRECT, "2026-12-01T23:30:00+01:00"),
                                     (WRONG, "2026-12-01T18:30:00-05:00")])
    on_time = git(repo, "rev-parse", "HEAD~1").strip()
    v = git_history.due_version(repo, due)
    assert v.commit == on_time and v.later_commits == 1
    assert v.latest_late_by == timedelta(minutes=31)
    rel, content = git_history.read_at(repo, v.commit, "attention.py", 2**20, 2**20)
    assert rel == "attention.py" and content == CORRECT.read_bytes()
    # The working tree is untouched: the late file is still there.
    assert (repo / "attention.py").read_bytes() == WRONG.read_bytes()
    assert git(repo, "status", "--porcelain") == ""


def test_author_date_does_not_count(tmp_path):
    """An amended commit keeps its old author date; its committer date is what counts."""
    repo = make_repo(tmp_path, "r", [(TEMPLATE, "2026-11-30T10:00:00Z")])
    shutil.copy(CORRECT, repo / "attention.py")
    git(repo, "add", "attention.py")
    env_date = "2026-12-03T10:00:00Z"
    subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q",
                    "-m", "late", "--date", "2026-11-30T12:00:00Z"], cwd=repo, check=True,
                   env={"PATH": os.environ["PATH"], "HOME": str(repo),
                        "GIT_COMMITTER_DATE": env_date})
    v = git_history.due_version(repo, git_history.parse_due(DUE))
    assert v.commit == git(repo, "rev-parse", "HEAD~1").strip() and v.later_commits == 1


def test_a_relative_folder_is_read(tmp_path, monkeypatch):
    """`autograder grade repos/ --due ...` from the class folder's parent."""
    make_repo(tmp_path, "r", [(CORRECT, "2026-12-01T20:00:00+01:00")])
    monkeypatch.chdir(tmp_path)
    v = git_history.due_version(Path("r"), git_history.parse_due(DUE))
    assert v.commit and git_history.read_at(Path("r"), v.commit, "attention.py", 2**20,
                                            2**20)[1] == CORRECT.read_bytes()


def test_no_commit_before_the_due_time(tmp_path):
    repo = make_repo(tmp_path, "r", [(CORRECT, "2026-12-02T09:00:00+09:00")])   # 00:00 UTC
    v = git_history.due_version(repo, git_history.parse_due(DUE))
    assert v.commit is None and v.later_commits == 1 and v.latest is not None


def test_due_needs_a_zone():
    with pytest.raises(ValueError, match="time zone"):
        git_history.parse_due("2026-12-01T23:59:00")
    assert git_history.parse_due("2026-12-01T22:59:00Z") == git_history.parse_due(DUE)


def test_a_committed_link_is_refused(tmp_path):
    repo = make_repo(tmp_path, "r", [])
    (repo / "attention.py").symlink_to("../../reference/attention.py")
    git(repo, "add", "attention.py")
    git(repo, "commit", "-q", "-m", "link", date="2026-12-01T10:00:00Z")
    v = git_history.due_version(repo, git_history.parse_due(DUE))
    with pytest.raises(git_history.HistoryError, match="symbolic link"):
        git_history.read_at(repo, v.commit, "attention.py", 2**20, 2**20)


def test_an_oversized_blob_is_refused(tmp_path):
    repo = make_repo(tmp_path, "r", [])
    (repo / "attention.py").write_bytes(b"#" * 5000)
    git(repo, "add", "attention.py")
    git(repo, "commit", "-q", "-m", "big", date="2026-12-01T10:00:00Z")
    v = git_history.due_version(repo, git_history.parse_due(DUE))
    with pytest.raises(git_history.HistoryError, match="larger"):
        git_history.read_at(repo, v.commit, "attention.py", 1000, 1000)


def test_a_hostile_git_config_runs_nothing(tmp_path):
    """Every config a student's .git could use to run a program while the grader reads it."""
    repo = make_repo(tmp_path, "r", [(CORRECT, "2026-12-01T10:00:00Z")])
    marker = tmp_path / "pwned"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    evil = str(script)
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + f"""
[core]
    repositoryformatversion = 1
    fsmonitor = {evil}
    hooksPath = hooks
    pager = {evil}
    sshCommand = {evil}
    alternateRefsCommand = {evil}
[log]
    showSignature = true
[gpg]
    program = {evil}
[diff "x"]
    textconv = {evil}
[filter "x"]
    smudge = {evil}
    process = {evil}
[extensions]
    partialClone = origin
[remote "origin"]
    url = ext::{evil}
    promisor = true
[protocol "ext"]
    allow = always
""")
    (repo / ".gitattributes").write_text("*.py diff=x filter=x\n")
    hooks = repo / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "pre-commit", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (hooks / hook).chmod(0o755)
    # The attack is real: plain git, asked for a missing object, runs the "remote".
    subprocess.run(["git", "cat-file", "blob", "1" * 40], cwd=repo, capture_output=True,
                   env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert marker.exists()
    marker.unlink()
    v = git_history.due_version(repo, git_history.parse_due(DUE))
    rel, content = git_history.read_at(repo, v.commit, "attention.py", 2**20, 2**20)
    assert content == CORRECT.read_bytes()
    # A missing object would make git fetch from the promisor remote: it must not.
    with pytest.raises(git_history.HistoryError):
        git_history.run_git(repo, ["cat-file", "blob", "1" * 40])
    assert not marker.exists()


def test_a_borrowed_object_store_is_not_read(tmp_path):
    repo = make_repo(tmp_path, "r", [(CORRECT, "2026-12-01T10:00:00Z")])
    (repo / ".git" / "objects" / "info" / "alternates").write_text("/elsewhere/objects\n")
    with pytest.raises(git_history.HistoryError, match="borrows"):
        git_history.due_version(repo, git_history.parse_due(DUE))


def test_linked_objects_are_not_read(tmp_path):
    other = make_repo(tmp_path, "other", [(CORRECT, "2026-12-01T10:00:00Z")])
    repo = make_repo(tmp_path, "r", [(TEMPLATE, "2026-12-01T10:00:00Z")])
    shutil.rmtree(repo / ".git" / "objects")
    (repo / ".git" / "objects").symlink_to(other / ".git" / "objects")
    with pytest.raises(git_history.HistoryError, match="symbolic link"):
        git_history.due_version(repo, git_history.parse_due(DUE))


def test_a_git_link_is_not_a_repository(tmp_path):
    real = make_repo(tmp_path, "real", [(CORRECT, "2026-12-01T10:00:00Z")])
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / ".git").symlink_to(real / ".git")
    assert git_history.is_repository(real) and not git_history.is_repository(fake)


# ------------------------------------------------------------------ one graded class

@pytest.fixture(scope="module")
def term(tmp_path_factory):
    root = tmp_path_factory.mktemp("term")
    cls = root / "class"
    # on time: correct before the due time, a wrong commit after it
    make_repo(cls, "hw1-ann", [(CORRECT, "2026-12-01T20:00:00+01:00"),
                               (WRONG, "2026-12-02T09:00:00+01:00")])
    # late only: nothing before the due time
    make_repo(cls, "hw1-bo", [(CORRECT, "2026-12-03T12:00:00-08:00")])
    # not a repository
    (cls / "hw1-cy").mkdir()
    shutil.copy(CORRECT, cls / "hw1-cy" / "attention.py")
    # matches no one in the roster
    (cls / "hw1-zed").mkdir()
    shutil.copy(CORRECT, cls / "hw1-zed" / "attention.py")
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name,section\n"
                      "1001,Ann,Ann A,S1\n1002,bo,,S1\n1003,cy,Cy C,S2\n"
                      "@SUM(A1),dee,Dee,S2\n")
    runs = {}
    for name, extra in (("due", []), ("late", ["--late-policy", "10%/day,max=50%"])):
        out = root / f"out-{name}"
        r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out),
                           "--question", "softmax", "--jobs", "1", "--roster", str(roster),
                           "--due", DUE, *extra)
        assert r.returncode == 0, r.stdout + r.stderr[-3000:]
        rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
        lms = list(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
        runs[name] = {"out": out, "stdout": r.stdout, "rows": rows, "lms": lms,
                      "json": json.loads((out / "grades.json").read_text())}
    yield runs


def test_roster_rows(term):
    run = term["due"]
    by_ident = {r["identifier"]: r for r in run["rows"]}
    assert set(by_ident) == {"1001", "1002", "1003", "'@SUM(A1)", ""}
    assert by_ident["'@SUM(A1)"]["status"] == "missing"           # no folder at all
    assert "no submission found" in by_ident["'@SUM(A1)"]["error"]
    assert by_ident[""]["student"] == "hw1-zed"                    # matched no one
    assert "matched no one in the roster: hw1-zed" in run["stdout"]
    assert "have no submission: Dee (@SUM(A1), GitHub user dee)" in run["stdout"]
    assert len(run["rows"]) == 5


def test_due_date_rows(term):
    rows = {r["identifier"]: r for r in term["due"]["rows"]}
    ann = rows["1001"]
    assert float(ann["total"]) == SOFTMAX and ann["later_commits"] == "1"   # the correct, on-time one
    assert float(ann["late_by_hours"]) == pytest.approx(9.02, abs=0.01)
    assert ann["commit"] and ann["committed"].startswith("2026-12-01T20:00:00+01:00")
    assert ann["adjusted_total"] == ann["total"]
    bo = rows["1002"]
    assert bo["status"] == "missing" and "no submission before the due date" in bo["error"]
    assert float(bo["total"]) == 0
    cy = rows["1003"]
    assert float(cy["total"]) == SOFTMAX and cy["commit"] == ""
    data = {s.get("identifier"): s for s in term["due"]["json"]["submissions"]}
    assert any("not a git repository" in n for n in data["1003"]["notes"])
    assert "@" in data["1001"]["path"] and ".due" not in data["1001"]["path"]


def test_late_policy_adjusts_a_separate_column(term):
    rows = {r["identifier"]: r for r in term["late"]["rows"]}
    ann = rows["1001"]   # the latest (wrong) commit, 9 h late: one day, 10%
    assert ann["days_late"] == "1" and float(ann["total"]) < SOFTMAX
    assert ann["committed"].startswith("2026-12-02T09:00:00+01:00")   # the commit graded
    assert float(ann["adjusted_total"]) == pytest.approx(float(ann["total"]) * 0.9)
    bo = rows["1002"]    # 1 day and 21 h late (20:00 UTC two days on): 2 days, 20%
    assert bo["days_late"] == "2" and float(bo["total"]) == SOFTMAX
    assert float(bo["adjusted_total"]) == pytest.approx(SOFTMAX * 0.8)


def test_lms_gradebook_file(term):
    lms = term["due"]["lms"]
    assert lms[0] == ["Student", "SIS User ID", "SIS Login ID", "Section",
                      "Attention from scratch (PyTorch)"]
    body = {row[1]: row for row in lms[1:]}
    assert set(body) == {"1001", "1002", "1003", "'@SUM(A1)"}    # the unmatched folder is not
    assert body["1001"][0] == "Ann A" and body["1001"][4] == f"{SOFTMAX:g}"
    assert body["1002"][4] == "0"
    late = {row[1]: row[4] for row in term["late"]["lms"][1:]}
    assert float(late["1002"]) == pytest.approx(SOFTMAX * 0.8)             # the adjusted total
