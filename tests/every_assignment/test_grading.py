"""Every assignment of assignments/ (the shipped ones and any dropped in), as its author and an
instructor meet it: its notebook is what the generator writes, its
reference takes every autograded point and its template none, and each planted mistake of its
corpus loses points on its own questions only, with feedback a student can act on that names
the mistake its header declares."""
import subprocess
from pathlib import Path

import pytest

from helpers import (ROOT, TESTED_ELSEWHERE, assignment_names, assert_loses_and_keeps,
                     cli_in_process, corpus_files, id_list, load_json, read_header)

from autograder.grading.grade import grade_submission
from autograder.model.assignment import load_assignment
from autograder.model.results import diagnoses
from autograder.platforms.notebook.build import notebook_path, notebook_text
from autograder.yardsticks.evaluate import NONE

NAMES = assignment_names()
WRONG = [(n, f) for n in NAMES for f in corpus_files(n)[0]]
CORRECT = [(n, f) for n in NAMES for f in corpus_files(n)[1]]


def _ids(value):
    return value.stem if isinstance(value, Path) else value


# Lint (with the reference run) and `autograder snapshot` rewriting nothing are tested over
# every assignment in authoring/test_lint.py, test_lint_cases.py and test_snapshot_files.py.

@pytest.mark.parametrize("name", NAMES)
def test_the_committed_notebook_is_what_the_generator_makes(name):
    assignment = load_assignment(name)
    assert notebook_path(assignment).read_text() == notebook_text(assignment), \
        f"run `python -m autograder.platforms.notebook {name}`"


@pytest.mark.parametrize("name", NAMES)
def test_reference_takes_every_autograded_point_and_the_template_none(name, sandbox, tmp_path):
    """"The reference scores full marks" means every autograded point: written questions are
    graded by hand, and the reference (which answers none) gets their points only from a
    grader."""
    assignment = load_assignment(name)
    r = cli_in_process("grade", "-a", name, str(assignment.reference_path), "--json",
                       str(tmp_path / "grades.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    row = load_json(tmp_path / "grades.json")["submissions"][0]
    assert row["error"] is None
    autograded = {qid: q for qid, q in row["questions"].items() if q.get("kind") != "written"}
    assert list(autograded) == [q.id for q in assignment.questions]
    for qid, q in autograded.items():
        assert q["status"] == "passed" and q["score"] == q["max_score"] > 0, q["feedback"]
        assert any(not c["hidden"] for c in q["cases"]), f"{qid} has no public case"
    points = sum(q["max_score"] for q in autograded.values())
    written = sum(w.points for w in assignment.written)
    assert row["score"] == points and row["max_score"] == points + written
    template = grade_submission(assignment, assignment.template, sandbox)
    assert template.score == 0 and template.error is None
    for q in template.questions.values():
        assert q.status == "not attempted", q.feedback()


@pytest.mark.parametrize("name", [n for n in NAMES if corpus_files(n)[0]])
def test_the_corpus_covers_every_question(name):
    wrong, correct = corpus_files(name)
    covered = set()
    for f in wrong:
        header = read_header(f)
        assert header.get("loses") and "keeps" in header and header.get("diagnosis"), f.name
        covered |= set(id_list(header["loses"]))
    assert covered == {q.id for q in load_assignment(name).questions}
    assert correct, f"{name}: no correct submission written another way"


@pytest.mark.parametrize("name,path", WRONG, ids=_ids)
def test_each_planted_mistake_loses_its_questions_only_and_is_named(name, path, graded_corpus):
    header = read_header(path)
    result = graded_corpus(name)[path.name]
    assert result.error is None, result.error
    questions = [q.id for q in load_assignment(name).questions]
    loses = assert_loses_and_keeps(result, header, questions)
    named = diagnoses(result)
    want = set(id_list(header["diagnosis"]))
    if want == {NONE}:
        assert not named, f"{path.name}: a mistake the catalogue does not know, named {named}"
    else:
        assert want & named and not named - want, f"{path.name}: named {sorted(named)}"
    assert any(c.hint for qid in loses for c in result.questions[qid].cases) or want == {NONE}


@pytest.mark.parametrize("name,path", CORRECT, ids=_ids)
def test_each_correct_solution_keeps_every_point_unnamed(name, path, graded_corpus):
    result = graded_corpus(name)[path.name]
    for q in result.questions.values():
        assert q.status == "passed", f"{path.name} {q.id}: {q.feedback()}"
    assert not diagnoses(result) and not result.integrity


def test_surfaces_left_to_dedicated_tests_are_tested_there():
    """An assignment left out of a surface here (`helpers.TESTED_ELSEWHERE`) is a shipped one
    whose dedicated test module runs that surface on it."""
    for surface, owners in TESTED_ELSEWHERE.items():
        for name, module in owners.items():
            assert name in NAMES, (surface, name)
            text = (ROOT / "tests" / module).read_text()
            assert f'"{name}"' in text or (name == "attention" and "built" in text), \
                (surface, name, module)


def test_make_snapshot_and_lint_iterate_every_assignment():
    r = subprocess.run(["make", "-n", "snapshot", "lint"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    loops = [line for line in r.stdout.splitlines() if "for a in" in line]
    assert len(loops) == 2, r.stdout
    for line in loops:
        listed = line.split("for a in", 1)[1].split(";", 1)[0].split()
        assert listed == NAMES, line
