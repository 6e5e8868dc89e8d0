"""`grade --out R --deliver`: each student's feedback committed on a `feedback` branch of their
clone (the checked-out branch, index and working tree untouched), a Feedback pull request
comment per student, and a mail-merge file from the roster's emails. Nothing is sent."""
import csv
import os
import shutil
import subprocess

import pytest

from helpers import SUBMISSIONS, cli_in_process, git, make_repo

CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
WRONG = SUBMISSIONS / "wrong" / "softmax_no_max_subtraction.py"
DATE = "2026-12-01T20:00:00+01:00"


def _ref(repo, name: str) -> str | None:
    r = subprocess.run(["git", "rev-parse", "--verify", "-q", name], cwd=repo,
                       capture_output=True, text=True)
    return r.stdout.strip() or None


def _state(repo) -> tuple:
    """What the student sees in the clone: HEAD, the checked-out branch's commit, the index
    and the working tree as git reports them, and the working files' bytes."""
    head = (repo / ".git" / "HEAD").read_text()
    files = {p.relative_to(repo).as_posix(): (os.readlink(p) if p.is_symlink() else
                                                p.read_bytes())
             for p in sorted(repo.rglob("*")) if ".git" not in p.parts
             and (p.is_file() or p.is_symlink())}
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    index = (repo / ".git" / "index").read_bytes() if (repo / ".git" / "index").exists() \
        else None
    return head, _ref(repo, "HEAD"), status, files, index


def _refs(repo) -> dict:
    """Every ref file and reflog of the repository, as bytes (symbolic refs as written), and
    every ref git lists with what it points at."""
    gitdir = repo / ".git"
    files = {p.relative_to(gitdir).as_posix(): p.read_bytes()
             for top in ("refs", "logs", "worktrees") for p in sorted((gitdir / top).rglob("*"))
             if p.is_file() and not p.is_symlink()}
    for name in ("HEAD", "ORIG_HEAD", "packed-refs"):
        if (gitdir / name).is_file():
            files[name] = (gitdir / name).read_bytes()
    listed = subprocess.run(["git", "for-each-ref", "--format=%(refname) %(symref) "
                             "%(objectname)"], cwd=repo, capture_output=True, text=True).stdout
    return {"files": files, "listed": listed}


@pytest.fixture(scope="module")
def deliveries(tmp_path_factory):
    root = tmp_path_factory.mktemp("deliver")
    cls = root / "class"
    ann = make_repo(cls, "ann", [(WRONG, DATE)])
    (ann / "notes.txt").write_text("my own notes, not committed\n")     # untracked
    (ann / "attention.py").write_text(CORRECT.read_text())               # uncommitted edit
    bob = make_repo(cls, "bob", [(CORRECT, DATE), (WRONG, DATE)])
    git(bob, "checkout", "-q", "--detach", "HEAD~1")                     # detached HEAD
    cy = cls / "cy"                                                      # no commits yet
    cy.mkdir()
    git(cy, "init", "-q")
    shutil.copy(CORRECT, cy / "attention.py")
    dan = make_repo(cls, "dan", [(CORRECT, DATE)])                       # a feedback branch
    git(dan, "branch", "feedback")
    (dan / "FEEDBACK.md").write_text("from the teaching assistant\n")
    git(dan, "checkout", "-q", "feedback")
    git(dan, "add", "FEEDBACK.md")
    git(dan, "commit", "-q", "-m", "TA feedback", date=DATE)
    git(dan, "checkout", "-q", "main")
    eve = make_repo(cls, "eve", [(CORRECT, DATE)])                       # works on `feedback`
    git(eve, "checkout", "-q", "-b", "feedback")
    fay = make_repo(cls, "fay", [(CORRECT, DATE)])                       # a committed link
    (fay / "FEEDBACK.md").symlink_to("../ann/attention.py")
    git(fay, "add", "FEEDBACK.md")
    git(fay, "commit", "-q", "-m", "link", date=DATE)
    gus = make_repo(cls, "gus", [(CORRECT, DATE)])                       # a link in .git
    target = root / "elsewhere"
    target.mkdir()
    (gus / ".git" / "refs" / "heads" / "feedback").symlink_to(target / "ref")
    hal = make_repo(cls, "hal", [(CORRECT, DATE)])                       # feedback -> main
    git(hal, "symbolic-ref", "refs/heads/feedback", "refs/heads/main")
    roster = root / "roster.csv"
    roster.write_text("identifier,github_username,name,email\n"
                      "1,ann,Ann,ann@example.edu\n2,bob,Bob,=cmd@example.edu\n3,cy,Cy,\n"
                      "4,dan,Dan,dan@example.edu\n5,eve,Eve,eve@example.edu\n"
                      "6,fay,Fay,fay@example.edu\n7,gus,Gus,gus@example.edu\n"
                      "8,hal,Hal,hal@example.edu\n")
    before = {p.name: _state(p) for p in sorted(cls.iterdir())}
    refs_before = {p.name: _refs(p) for p in sorted(cls.iterdir())}
    dan_tip = _ref(dan, "feedback")
    out = root / "out"
    args = ("grade", "-a", "attention", str(cls), "--out", str(out), "--question", "softmax",
            "--jobs", "1", "--roster", str(roster), "--deliver")
    first = cli_in_process(*args)
    tips = {p.name: _ref(p, "refs/heads/feedback") for p in sorted(cls.iterdir())}
    again = cli_in_process(*args)
    return {"root": root, "cls": cls, "out": out, "first": first, "again": again,
            "before": before, "refs_before": refs_before, "tips": tips,
            "dan_tip": dan_tip, "args": args,
            "target": target, "roster": roster}


def _show(repo, spec: str) -> bytes:
    return subprocess.run(["git", "show", spec], cwd=repo, capture_output=True,
                          check=True).stdout


def test_runs_finish(deliveries):
    for run in ("first", "again"):
        r = deliveries[run]
        assert r.returncode == 0, r.stdout + r.stderr[-3000:]


def test_the_feedback_is_committed_on_its_own_branch(deliveries):
    cls, out = deliveries["cls"], deliveries["out"]
    for name in ("ann", "bob", "cy", "dan", "fay"):
        repo = cls / name
        assert _show(repo, "feedback:FEEDBACK.md") == (out / "feedback" / f"{name}.md").read_bytes()
    ann = cls / "ann"
    # Branched from the checked-out commit, whose files it keeps (the committed version).
    assert _ref(ann, "feedback~1") == deliveries["before"]["ann"][1]
    assert _show(ann, "feedback:attention.py") == WRONG.read_bytes()
    assert "feedback branch `feedback`: 5 commit(s) made" in deliveries["first"].stdout


def test_the_students_checkout_is_untouched(deliveries):
    cls = deliveries["cls"]
    for name, state in deliveries["before"].items():
        assert _state(cls / name) == state, name


def test_detached_head_no_commits_and_an_existing_branch(deliveries):
    cls = deliveries["cls"]
    bob = cls / "bob"
    assert _ref(bob, "feedback~1") == deliveries["before"]["bob"][1]    # the detached commit
    cy = cls / "cy"                          # a first commit of its own, only the feedback
    assert _ref(cy, "feedback~1") is None
    assert git(cy, "ls-tree", "--name-only", "feedback").split() == ["FEEDBACK.md"]
    assert _ref(cy, "HEAD") is None          # still no commit on the student's branch
    dan = cls / "dan"                        # on top of the TA's commit: history kept
    assert _ref(dan, "feedback~1") == deliveries["dan_tip"]


def test_refusals(deliveries):
    cls, out = deliveries["cls"], deliveries["first"].stdout
    # A symbolic ref `feedback -> main`: main, HEAD, the index and every ref stay as they were.
    hal = cls / "hal"
    assert "Hal: not written: the branch `feedback` is a symbolic ref to `refs/heads/main`; " \
        "writing it would move that ref instead" in out
    assert _refs(hal) == deliveries["refs_before"]["hal"]
    assert _ref(hal, "main") == deliveries["before"]["hal"][1]
    assert deliveries["tips"]["eve"] == _ref(cls / "eve", "main")     # not moved
    assert "Eve: not written: the checked-out branch is `feedback`" in out
    assert "Gus: not written:" in out and "symbolic link" in out
    assert not list(deliveries["target"].iterdir())                     # nothing followed
    fay = cls / "fay"                        # the committed link is replaced, not followed
    mode = git(fay, "ls-tree", "feedback", "FEEDBACK.md").split()[0]
    assert mode == "100644" and (fay / "FEEDBACK.md").is_symlink()


def test_a_rerun_adds_a_commit_only_when_the_feedback_changed(deliveries, tmp_path):
    cls = deliveries["cls"]
    assert "0 commit(s) made, 5 unchanged" in deliveries["again"].stdout
    assert {n: _ref(cls / n, "refs/heads/feedback") for n in deliveries["tips"]} == \
        deliveries["tips"]
    overrides = tmp_path / "overrides.csv"
    overrides.write_text("student,question,points,reason\nann,softmax,6,regraded by hand\n")
    r = cli_in_process(*deliveries["args"], "--overrides", str(overrides))
    assert r.returncode == 0 and "1 commit(s) made, 4 unchanged" in r.stdout
    ann = cls / "ann"
    assert _ref(ann, "feedback~1") == deliveries["tips"]["ann"]         # added, not rewritten
    assert b"regraded by hand" in _show(ann, "feedback:FEEDBACK.md")


def test_comments_and_the_mail_merge_file(deliveries):
    out = deliveries["out"]
    comments = out / "feedback-pr"
    for name in ("ann", "bob", "cy", "dan", "eve", "fay", "gus", "hal"):
        assert (comments / f"{name}.md").read_text() == \
            (out / "feedback" / f"{name}.md").read_text()
    rows = list(csv.reader((out / "mail-merge.csv").open(encoding="utf-8")))
    assert rows[0] == ["email", "subject", "body_file"]
    by_email = {r[0]: r for r in rows[1:]}
    assert by_email["ann@example.edu"][2] == "feedback/ann.md"
    assert "'=cmd@example.edu" in by_email                  # no cell starts a formula
    assert len(rows) == 8 and "no email in the roster for: Cy" in deliveries["first"].stdout


def test_long_feedback_is_cut_to_a_comment(tmp_path):
    from autograder.course.feedback_delivery import MAX_COMMENT, comment_body

    body = comment_body("x" * (MAX_COMMENT * 2), "T")
    assert len(body) <= MAX_COMMENT and "FEEDBACK.md" in body


def test_deliver_needs_out(tmp_path):
    r = cli_in_process("grade", "-a", "attention", str(CORRECT), "--deliver")
    assert r.returncode == 2 and "--deliver" in r.stderr


# ------------------------------------------------------------------ writes that land elsewhere
# Each layout below makes a write of `refs/heads/feedback` move something else of the
# student's: the branch is refused with the reason, and every ref, reflog, HEAD, the index and
# the working tree stay byte for byte as they were.

def _feedback_branch(repo):
    git(repo, "branch", "feedback")


def _main_leads_to_feedback(repo):            # HEAD -> main -> feedback (checked out)
    _feedback_branch(repo)
    git(repo, "update-ref", "-d", "refs/heads/main")
    git(repo, "symbolic-ref", "refs/heads/main", "refs/heads/feedback")


def _main_leads_to_an_unborn_feedback(repo):  # creating feedback would give HEAD a commit
    git(repo, "update-ref", "-d", "refs/heads/main")
    git(repo, "symbolic-ref", "refs/heads/main", "refs/heads/feedback")


def _checked_out_in_a_worktree(repo):
    _feedback_branch(repo)
    git(repo, "worktree", "add", "-q", str(repo.parent / f"{repo.name}-wt"), "feedback")


def _an_alias_of_feedback(repo):              # another branch, through a case variant
    _feedback_branch(repo)
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/FEEDBACK")


def _a_pseudo_ref_to_feedback(repo):
    _feedback_branch(repo)
    (repo / ".git" / "ORIG_HEAD").write_text("ref: refs/heads/feedback\n")


def _a_folder_of_refs(repo):
    git(repo, "branch", "feedback/draft")


def _a_hard_linked_reflog(repo):
    other = repo.parent / f"{repo.name}-elsewhere.log"
    other.write_text("someone else's file\n")
    log = repo / ".git" / "logs" / "refs" / "heads" / "feedback"
    log.parent.mkdir(parents=True, exist_ok=True)
    os.link(other, log)


def _a_symref_chain_loop(repo):
    git(repo, "symbolic-ref", "refs/heads/a", "refs/heads/b")
    git(repo, "symbolic-ref", "refs/heads/b", "refs/heads/a")
    (repo / ".git" / "refs" / "heads" / "feedback").write_text("ref: refs/heads/a\n")


REFUSED = {
    "feedback -> main": (lambda r: git(r, "symbolic-ref", "refs/heads/feedback",
                                       "refs/heads/main"),
                         "the branch `feedback` is a symbolic ref to `refs/heads/main`"),
    "main -> feedback": (_main_leads_to_feedback, "the checked-out branch is `feedback` "
                         "(through `refs/heads/main`, a symbolic ref to it)"),
    "main -> unborn feedback": (_main_leads_to_an_unborn_feedback,
                                "the checked-out branch is `feedback` (through"),
    "worktree": (_checked_out_in_a_worktree, "is checked out in the linked worktree"),
    "alias": (_an_alias_of_feedback, "`refs/heads/alias` is a symbolic ref leading to the "
              "branch `feedback`"),
    "ORIG_HEAD": (_a_pseudo_ref_to_feedback, "`ORIG_HEAD` is a symbolic ref leading to"),
    "folder": (_a_folder_of_refs, "refs/heads/feedback is a folder"),
    "hard link": (_a_hard_linked_reflog, "is a hard link"),
    "loop": (_a_symref_chain_loop, "the branch `feedback` is a symbolic ref to `refs/heads/a`"),
}


@pytest.mark.parametrize("layout", REFUSED)
def test_a_write_that_would_land_elsewhere_is_refused(layout, tmp_path):
    from autograder.course.feedback_delivery import commit_feedback
    from autograder.course.git_history import HistoryError

    repo = make_repo(tmp_path, "student", [(CORRECT, DATE)])
    make, reason = REFUSED[layout]
    make(repo)
    before, refs = _state(repo), _refs(repo)
    elsewhere = {p: p.read_bytes() for p in tmp_path.glob("student-*") if p.is_file()}
    with pytest.raises(HistoryError) as refused:
        commit_feedback(repo, "# Feedback\n", "Feedback: test")
    assert reason in str(refused.value)
    assert _state(repo) == before and _refs(repo) == refs
    assert {p: p.read_bytes() for p in elsewhere} == elsewhere


def test_a_gitdir_file_is_refused(tmp_path):
    """A class folder that is a linked worktree (`.git` is a `gitdir:` file): its history may
    be anyone's, and nothing is written there or in the repository it names."""
    from autograder.course.feedback_delivery import commit_feedback
    from autograder.course.git_history import HistoryError

    repo = make_repo(tmp_path, "student", [(CORRECT, DATE)])
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "work", str(linked))
    refs = _refs(repo)
    with pytest.raises(HistoryError, match=r"\.git is a file pointing elsewhere"):
        commit_feedback(linked, "# Feedback\n", "Feedback: test")
    assert _refs(repo) == refs


@pytest.mark.parametrize("layout", ["packed", "clone", "other worktree"])
def test_ordinary_repositories_get_their_branch(layout, tmp_path):
    """Packed refs, a clone's `origin/HEAD` (a symbolic ref to `origin/main`) and a linked
    worktree on another branch are ordinary: the feedback branch is written, nothing else."""
    from autograder.course.feedback_delivery import commit_feedback

    repo = make_repo(tmp_path, "origin", [(CORRECT, DATE)])
    if layout == "clone":
        git(tmp_path, "clone", "-q", str(repo), "student")
        repo = tmp_path / "student"
    elif layout == "packed":
        git(repo, "branch", "feedback")
        git(repo, "tag", "v1")
        git(repo, "pack-refs", "--all")
    else:
        git(repo, "worktree", "add", "-q", "-b", "draft", str(tmp_path / "wt"))
    before, listed = _state(repo), _refs(repo)["listed"].splitlines()
    status, sha = commit_feedback(repo, "# Feedback\n", "Feedback: test")
    assert status == "committed" and _ref(repo, "refs/heads/feedback") == sha
    assert _state(repo) == before
    after = _refs(repo)["listed"].splitlines()
    assert [line for line in after if not line.startswith("refs/heads/feedback ")] == \
        [line for line in listed if not line.startswith("refs/heads/feedback ")]
