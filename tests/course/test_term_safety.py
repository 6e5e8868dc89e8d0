"""What the class run trusts in a roster and a `.git` folder: a roster row is taken only by the
exact folder name, and `--due` reads only the student's own repository (no link anywhere in
`.git` is followed, no `gitdir:` file, no commit date out of range ends the run).

The hostile cases are real: each link attack is first shown to work on plain git, then refused
here; honest repositories (loose objects, packed refs, a `git gc`) keep being read."""
from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, git, make_repo, max_points, run_cli

from autograder.course import git_history
from autograder.course.classlist import Student
from autograder.course.gradebook import Term
from autograder.course.roster import Member, class_prefix, join

CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"
TEMPLATE = ROOT / "student_template" / "attention.py"
DUE = "2026-12-01T23:59:00+01:00"
YEAR_3170843 = "@100000000000000 +0000"




def students(root: Path, *names: str) -> list[Student]:
    return [Student(n, root / n, root / n / "attention.py") for n in names]


def roster(*users: str) -> list[Member]:
    return [Member(f"{u}@uni.edu", u, u.title()) for u in users]


def rows_by_identifier(joined) -> dict:
    return {m.identifier if m else None: s for m, s in joined.rows}


# ------------------------------------------------------------------ item: a roster row

def test_an_outsiders_suffix_folder_does_not_take_the_row(tmp_path):
    """`attention-a-alice` (GitHub user a-alice, not on the roster) is not Alice's."""
    joined = join(roster("alice", "bob"),
                  students(tmp_path, "attention-a-alice", "attention-alice", "attention-bob"))
    rows = rows_by_identifier(joined)
    assert rows["alice@uni.edu"].name == "attention-alice"
    assert rows["bob@uni.edu"].name == "attention-bob"
    assert [s.name for s in joined.unmatched] == ["attention-a-alice"]
    assert not joined.contested and not joined.missing


def test_an_outsider_does_not_take_an_absent_students_row(tmp_path):
    """Alice has no folder: the outsider's still does not become hers (she is missing)."""
    for names in (["attention-a-alice", "attention-bob"], ["attention-a-alice"],
                  ["attention-a-alice", "attention-bob", "attention-a-bob"],
                  ["attention-x-alice", "attention-bob", "attention-carol"]):
        joined = join(roster("alice", "bob", "carol"), students(tmp_path, *names))
        rows = rows_by_identifier(joined)
        assert rows["alice@uni.edu"].problem.startswith("missing:"), names
        assert names[0] in [s.name for s in joined.unmatched]


def test_bare_usernames_have_no_prefix(tmp_path):
    """A class cloned as bare usernames: `x-alice` is someone else, `alice` is Alice."""
    assert class_prefix(["alice", "bob", "x-alice"]) is None
    joined = join(roster("alice", "bob"), students(tmp_path, "x-alice", "Alice", "bob"))
    rows = rows_by_identifier(joined)
    assert rows["alice@uni.edu"].name == "Alice"            # without regard to case
    assert [s.name for s in joined.unmatched] == ["x-alice"]


def test_honest_names_are_matched(tmp_path):
    """Usernames with hyphens, a prefix with hyphens, upper case, a bare folder mixed in."""
    assert class_prefix(["hw-1-ann-lee", "HW-1-bo", "hw-1-cy", "dee"]) == "hw-1"
    joined = join(roster("Ann-Lee", "bo", "cy", "dee", "lee"),
                  students(tmp_path, "hw-1-ann-lee", "HW-1-bo", "hw-1-cy", "dee"))
    rows = rows_by_identifier(joined)
    assert {k: s.name for k, s in rows.items() if not s.problem} == {
        "Ann-Lee@uni.edu": "hw-1-ann-lee", "bo@uni.edu": "HW-1-bo", "cy@uni.edu": "hw-1-cy",
        "dee@uni.edu": "dee"}
    assert rows["lee@uni.edu"].problem.startswith("missing:")   # no suffix match for "lee"
    assert not joined.unmatched


def test_two_claims_are_both_reported_and_neither_chosen(tmp_path):
    joined = join(roster("alice", "bob"),
                  students(tmp_path, "attention-alice", "alice", "attention-bob"))
    rows = joined.rows
    alice = next(s for m, s in rows if m and m.identifier == "alice@uni.edu")
    assert alice.file is None and alice.problem.startswith("ambiguous: 2 submissions claim")
    assert "attention-alice, alice" in alice.problem
    # both claimants are graded, on rows without the identifier, each with a note
    claimants = [s for m, s in rows if m is None]
    assert sorted(s.name for s in claimants) == ["alice", "attention-alice"]
    assert all("all claim roster student alice@uni.edu" in s.notes[-1] for s in claimants)
    assert [(m.identifier, [s.name for s in c]) for m, c in joined.contested] == [
        ("alice@uni.edu", ["attention-alice", "alice"])]
    assert not joined.unmatched


class _Graded:
    def __init__(self, student, score):
        self.student = student
        self.result = type("R", (), {"score": score, "path": "", "missing": False})()


def test_a_claimed_row_sends_no_points_to_the_lms(tmp_path, assignment_torch):
    class_dir = tmp_path / "class"
    for n in ("attention-alice", "alice", "attention-bob"):
        (class_dir / n).mkdir(parents=True)
        shutil.copy(CORRECT, class_dir / n / "attention.py")
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("identifier,github_username,name\n1,alice,Alice\n2,bob,Bob\n")
    from autograder.course.classlist import discover

    term = Term(assignment_torch, discover([str(class_dir)], "attention.py"),
                roster=str(roster_file), due=None, late_policy=None, out=None)
    graded = [_Graded(s, 6.0 if s.file else 0.0) for s in term.students]
    extra = term.extra(graded)
    statuses = {g.student.name: (more["identifier"], more.get("status")) for g, more in
                zip(graded, extra)}
    assert statuses["Alice"] == ("1", "ambiguous")
    assert statuses["alice"] == ("", None) and statuses["attention-alice"] == ("", None)
    lms = term.write_lms(tmp_path, graded, extra)
    body = {row[1]: row[4] for row in list(csv.reader(lms.open()))[1:]}
    assert body == {"1": "", "2": "6"}     # Alice's cell empty: the LMS keeps what it has
    summary = "\n".join(term.summary())
    assert "1 roster student(s) claimed by more than one submission" in summary
    assert "1 by alice, attention-alice" in summary or "1 by attention-alice, alice" in summary


@pytest.fixture(scope="module")
def assignment_torch():
    from autograder.model.assignment import load_assignment

    return load_assignment("attention")


# ------------------------------------------------------------------ item: --due and .git

def _link_cases(repo: Path, other: Path) -> dict:
    """Where under .git a link could make git read `other`'s history as `repo`'s."""
    g, o = repo / ".git", other / ".git"
    return {
        "refs/heads/main": (g / "refs" / "heads" / "main", o / "refs" / "heads" / "main"),
        "refs/heads": (g / "refs" / "heads", o / "refs" / "heads"),
        "HEAD": (g / "HEAD", o / "HEAD"),
        "packed-refs": (g / "packed-refs", o / "packed-refs"),
        "config": (g / "config", o / "config"),
        "logs": (g / "logs", o / "logs"),
    }


LINK_PLACES = ["refs/heads/main", "refs/heads", "HEAD", "packed-refs", "config", "logs",
               "objects/xx", "objects/xx/object"]


@pytest.mark.parametrize("place", LINK_PLACES)
def test_a_link_anywhere_under_git_is_refused(tmp_path, place):
    other = make_repo(tmp_path, "classmate", [(CORRECT, "2026-12-01T10:00:00Z")])
    repo = make_repo(tmp_path, "mine", [(TEMPLATE, "2026-12-01T10:00:00Z")])
    theirs = git(other, "rev-parse", "HEAD").strip()
    if place.startswith("objects/xx"):
        # the classmate's commit object, linked into this object store
        sub, rest = theirs[:2], theirs[2:]
        if place == "objects/xx":
            shutil.rmtree(repo / ".git" / "objects" / sub, ignore_errors=True)
            (repo / ".git" / "objects" / sub).symlink_to(other / ".git" / "objects" / sub)
        else:
            (repo / ".git" / "objects" / sub).mkdir(exist_ok=True)
            (repo / ".git" / "objects" / sub / rest).symlink_to(
                other / ".git" / "objects" / sub / rest)
    else:
        if place == "packed-refs":
            git(other, "pack-refs", "--all")
        link, target = _link_cases(repo, other)[place]
        if link.is_dir():
            shutil.rmtree(link)
        elif link.exists():
            link.unlink()
        link.symlink_to(target)
    if place in ("refs/heads/main", "refs/heads", "packed-refs"):
        if place == "packed-refs":
            (repo / ".git" / "refs" / "heads" / "main").unlink()
            shutil.copytree(other / ".git" / "objects", repo / ".git" / "objects",
                            dirs_exist_ok=True)
        else:
            shutil.copytree(other / ".git" / "objects", repo / ".git" / "objects",
                            dirs_exist_ok=True)
        # The attack is real: plain git reads the classmate's commit as this repository's.
        assert git(repo, "rev-parse", "HEAD").strip() == theirs
    with pytest.raises(git_history.HistoryError, match=r"symbolic link; its history was not"):
        git_history.due_version(repo, git_history.parse_due(DUE))


def test_a_gitdir_file_is_refused(tmp_path):
    other = make_repo(tmp_path, "classmate", [(CORRECT, "2026-12-01T10:00:00Z")])
    repo = tmp_path / "mine"
    repo.mkdir()
    (repo / ".git").write_text(f"gitdir: {other / '.git'}\n")
    assert git(repo, "rev-parse", "HEAD").strip()           # plain git follows it
    assert "file pointing elsewhere" in git_history.foreign_git(repo)
    with pytest.raises(git_history.HistoryError, match="file pointing elsewhere"):
        git_history.due_version(repo, git_history.parse_due(DUE))


def test_a_linked_git_folder_is_refused(tmp_path):
    other = make_repo(tmp_path, "classmate", [(CORRECT, "2026-12-01T10:00:00Z")])
    repo = tmp_path / "mine"
    repo.mkdir()
    (repo / ".git").symlink_to(other / ".git")
    assert "is a symbolic link" in git_history.foreign_git(repo)
    with pytest.raises(git_history.HistoryError, match=r"\.git is a symbolic link"):
        git_history.due_version(repo, git_history.parse_due(DUE))
    assert git_history.foreign_git(other) is None and git_history.foreign_git(tmp_path) is None


def test_a_fifo_under_git_is_refused(tmp_path):
    repo = make_repo(tmp_path, "mine", [(CORRECT, "2026-12-01T10:00:00Z")])
    os.mkfifo(repo / ".git" / "FETCH_HEAD")
    with pytest.raises(git_history.HistoryError, match="not a regular file"):
        git_history.due_version(repo, git_history.parse_due(DUE))


def test_a_date_out_of_range_is_refused(tmp_path):
    repo = make_repo(tmp_path, "mine", [(CORRECT, "2026-12-01T10:00:00Z"),
                                        (WRONG, YEAR_3170843)])
    assert git(repo, "log", "-1", "--format=%cI").startswith("3170843-")
    with pytest.raises(git_history.HistoryError, match="out of range"):
        git_history.due_version(repo, git_history.parse_due(DUE))
    with pytest.raises(git_history.HistoryError, match="out of range"):
        git_history.head_commit_time(repo)


def test_honest_repositories_are_read(tmp_path):
    """Loose objects, then packed refs and objects after `git gc`, a branch with a slash,
    a zone of +14:00: all read, and the right commit picked."""
    repo = make_repo(tmp_path, "mine", [(TEMPLATE, "2001-01-01T00:00:00+14:00"),
                                        (CORRECT, "2026-12-01T10:00:00Z"),
                                        (WRONG, "2026-12-03T10:00:00Z")])
    on_time = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "branch", "feature/x")
    for step in ("loose", "gc"):
        if step == "gc":
            git(repo, "gc", "-q")
            assert (repo / ".git" / "packed-refs").exists()
        v = git_history.due_version(repo, git_history.parse_due(DUE))
        assert v.commit == on_time and v.later_commits == 1, step
        assert git_history.read_at(repo, v.commit, "attention.py", 2**20,
                                   2**20)[1] == CORRECT.read_bytes()


# ------------------------------------------------------------------ one class, end to end

def test_class_run_gives_each_hostile_repository_its_row(tmp_path):
    """One `autograder grade --roster --due` over a class where an outsider, a linked refs
    folder, a gitdir file, a date in year 3,170,843 and a student claimed twice all appear:
    the run finishes, and every row says what happened to it."""
    cls = tmp_path / "class"
    make_repo(cls, "attention-alice", [(CORRECT, "2026-12-01T20:00:00+01:00")])
    make_repo(cls, "attention-a-alice", [(WRONG, "2026-12-01T20:00:00+01:00")])
    carol = make_repo(cls, "attention-carol", [(CORRECT, "2026-12-01T20:00:00+01:00")])
    bob = make_repo(cls, "attention-bob", [(TEMPLATE, "2026-12-01T20:00:00+01:00")])
    shutil.copytree(carol / ".git" / "objects", bob / ".git" / "objects", dirs_exist_ok=True)
    shutil.rmtree(bob / ".git" / "refs" / "heads")
    (bob / ".git" / "refs" / "heads").symlink_to(carol / ".git" / "refs" / "heads")
    make_repo(cls, "attention-dan", [(CORRECT, "2026-12-01T20:00:00+01:00"),
                                     (WRONG, YEAR_3170843)])
    erin = cls / "attention-erin"
    erin.mkdir()
    shutil.copy(CORRECT, erin / "attention.py")
    (erin / ".git").write_text(f"gitdir: {carol / '.git'}\n")
    make_repo(cls, "attention-frank", [(CORRECT, "2026-12-01T20:00:00+01:00")])
    make_repo(cls, "frank", [(WRONG, "2026-12-01T20:00:00+01:00")])
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("identifier,github_username,name\n" + "".join(
        f"{i},{u},{u.title()}\n" for i, u in enumerate(
            ("alice", "bob", "carol", "dan", "erin", "frank"), 1)))
    out = tmp_path / "out"
    r = run_cli("grade", "-a", "attention", str(cls), "--out", str(out), "--question",
                "softmax", "--jobs", "1", "--roster", str(roster_file), "--due", DUE,
                timeout=900)
    # Graded, with a row that needs a decision (frank's, claimed twice): status 4.
    assert r.returncode == 4, r.stdout + r.stderr[-3000:]
    assert "1 row(s) need you: Frank (ambiguous roster match)" in r.stderr
    rows = list(csv.DictReader((out / "grades.csv").open(encoding="utf-8")))
    by_ident = {row["identifier"]: row for row in rows if row["identifier"]}
    assert float(by_ident["1"]["total"]) == max_points("softmax") and by_ident["1"]["student"] == "attention-alice"
    assert float(by_ident["3"]["total"]) == max_points("softmax")                     # carol, honest
    assert float(by_ident["2"]["total"]) == 0                     # bob: carol's refs refused
    assert "refs/heads is a symbolic link" in by_ident["2"]["error"]
    assert "out of range" in by_ident["4"]["error"] and float(by_ident["4"]["total"]) == 0
    assert "file pointing elsewhere" in by_ident["5"]["error"]
    assert by_ident["6"]["status"] == "ambiguous" and float(by_ident["6"]["total"]) == 0
    others = {row["student"]: row for row in rows if not row["identifier"]}
    assert set(others) == {"attention-a-alice", "attention-frank", "frank"}
    assert float(others["attention-frank"]["total"]) == max_points("softmax")          # both claimants graded
    assert "1 submission(s) matched no one in the roster: attention-a-alice" in r.stdout
    assert "claimed by more than one submission" in r.stdout
    lms = {row[1]: row[4] for row in list(csv.reader((out / "gradebook.csv").open()))[1:]}
    assert lms["6"] == "" and lms["1"] == f"{max_points('softmax'):g}" and lms["2"] == "0"
    data = json.loads((out / "grades.json").read_text())
    assert len(data["submissions"]) == 9
