"""One recipe for a class run (`course/class_run.py`): every entry point runs its stages, so a
stage added there reaches them all, and each entry point's results are `grade`'s on the same
files."""
from __future__ import annotations

import json
import shutil

import pytest

from helpers import SUBMISSIONS, cli_in_process, lent_sandbox

from autograder.course import class_run
from autograder.feedback.contract import submission_json
from autograder.model.assignment import load_assignment
from autograder.platforms.checkout import grade_checkout
from autograder.yardsticks.corpus_grading import CorpusGrades

FILES = [SUBMISSIONS / "correct" / "reference_style.py",
         SUBMISSIONS / "wrong" / "attention_divides_by_dk.py",
         SUBMISSIONS / "broken" / "syntax_error.py"]


@pytest.fixture
def stage_log(monkeypatch):
    """A stage added at the end of the recipe, recording the runs it sees."""
    seen: list[list[str]] = []
    stage = class_run.Stage("seen", lambda run: seen.append(
        [g.student.file.name for g in run.graded if g.student.file is not None]))
    monkeypatch.setattr(class_run, "STAGES", [*class_run.STAGES, stage])
    return seen


def _comparable(row: dict) -> dict:
    """A submission's JSON without what names the run (where the file was, how long)."""
    return {k: v for k, v in row.items() if k not in ("path", "seconds", "student")}


def test_a_new_stage_reaches_grade_classroom50_actions_and_diagnose_eval(stage_log, tmp_path):
    # autograder grade (and Gradescope, which runs it)
    r = cli_in_process("grade", "-a", "attention", *map(str, FILES[:2]))
    assert r.returncode == 0, r.stderr
    assert stage_log[-1] == [f.name for f in FILES[:2]]
    # Classroom 50 and Actions: one checkout, a class of one
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(FILES[1], checkout / "attention.py")
    with lent_sandbox():
        grade_checkout(load_assignment("attention"), checkout)
    assert stage_log[-1] == ["attention.py"]
    # diagnose-eval: the corpus, one run per track
    corpus = tmp_path / "corpus"
    (corpus / "wrong").mkdir(parents=True)
    shutil.copy(FILES[1], corpus / "wrong")
    with lent_sandbox():
        CorpusGrades(corpus, load_assignment("attention")).grade("attention",
                                                                 corpus / "wrong" / FILES[1].name)
    assert stage_log[-1] == [FILES[1].name]


def test_every_entry_point_gives_grades_results(tmp_path):
    out = tmp_path / "grades.json"
    r = cli_in_process("grade", "-a", "attention", *map(str, FILES), "--json", str(out))
    assert r.returncode == 0, r.stderr
    graded = {row["path"].rsplit("/", 1)[-1]: _comparable(row)
              for row in json.loads(out.read_text())["submissions"]}
    assignment = load_assignment("attention")
    with lent_sandbox():
        corpus = CorpusGrades(tmp_path, assignment)
        for f in FILES:
            assert _comparable(submission_json(corpus.grade("attention", f))) == graded[f.name]
            checkout = tmp_path / f"checkout-{f.stem}"
            checkout.mkdir()
            shutil.copy(f, checkout / "attention.py")
            ci = submission_json(grade_checkout(assignment, checkout))
            # CI shows written answers as graded later (`for_ci`); the autograded part is grade's
            ci_questions = {k: v for k, v in ci["questions"].items()
                            if k in {q.id for q in assignment.questions}}
            want = {k: v for k, v in graded[f.name]["questions"].items() if k in ci_questions}
            assert ci_questions == want, f.name


def test_the_stages_run_in_order_and_skip_what_does_not_apply(tmp_path):
    with lent_sandbox():
        run = class_run.run_class(load_assignment("attention"), [str(FILES[0])],
                                  class_run.RunOptions(jobs=1, progress=False))
    # No --out, no --json, no --similarity, no --deliver: those stages are skipped.
    assert run.stages_run == ["graded", "hand_grades", "overrides", "repository_flags",
                              "term_columns", "close_term"]
    assert run.reports == {} and run.gradebook is None and run.json is None
    assert [g.student.file for g in run.graded] == [FILES[0]]
    with lent_sandbox():
        run = class_run.run_class(load_assignment("attention"), [str(FILES[0])],
                                  class_run.RunOptions(jobs=1, progress=False,
                                                       out=tmp_path / "out",
                                                       json_path=tmp_path / "g.json"))
    assert run.stages_run[-3:] == ["reports", "gradebook", "json"]
    assert run.gradebook.is_file() and run.json.is_file() and run.reports["csv"].is_file()
