"""Every assignment of assignments/ as students meet it: the student bundle unzipped in a
fresh folder and checked there (the template, the reference, a submission that loses points),
and the bundle's notebook filled with that submission and executed, its `grader.check` cells
saying what the public cases say."""
import re
import shutil
import zipfile

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import assignments_for, autograded_scores, losing_submission, run_cli

from autograder.diagnose import catalogue_for
from autograder.model.assignment import load_assignment
from autograder.platforms.notebook.build import notebook_text



@pytest.mark.parametrize("name", assignments_for("bundle check"))
def test_the_unzipped_bundle_checks_like_the_grade_on_public_cases(name, built_assignment,
                                                                   graded, tmp_path):
    assignment = load_assignment(name)
    with zipfile.ZipFile(built_assignment(name) / f"{name}-student.zip") as z:
        z.extractall(tmp_path)
    folder = tmp_path / f"{name}-student"
    student = folder / assignment.student_file
    assert student.is_file() and not (folder / "reference").exists()
    r = run_cli("check", assignment.student_file, cwd=folder)        # the template as shipped
    assert r.returncode == 1, r.stdout + r.stderr
    assert all(f"[TODO] {q.id}:" in r.stdout for q in assignment.questions), r.stdout
    shutil.copy(assignment.reference_path, student)
    r = run_cli("check", assignment.student_file, cwd=folder)
    assert r.returncode == 0 and "All public checks pass" in r.stdout, r.stdout + r.stderr
    wrong = losing_submission(name)
    shutil.copy(wrong, student)
    r = run_cli("check", assignment.student_file, cwd=folder)
    public = graded(name, wrong, public_only=True)
    for qid, (score, top) in autograded_scores(public).items():
        assert re.search(rf"\] {qid}: {score:g}/{top:g} ", r.stdout), (qid, r.stdout)
    catalogue = catalogue_for(assignment)
    named = {i for q in public.questions.values() for c in q.cases for i in c.diagnosis or []}
    for mistake in sorted(named):     # what the grade names on public cases, the bundle names
        assert catalogue.mistakes[mistake].name in r.stdout, (mistake, r.stdout)


@pytest.mark.parametrize("name", assignments_for("notebook"))
def test_the_notebook_runs_and_its_checks_say_what_the_check_says(name, built_assignment,
                                                                  graded, tmp_path):
    """The bundle's notebook filled with a wrong submission's code and executed: each question's
    `grader.check` passes where the public cases pass and shows the failure where they fail."""
    assignment = load_assignment(name)
    shutil.copytree(built_assignment(name) / f"{name}-student", tmp_path / "bundle")
    wrong = losing_submission(name)
    nb = nbformat.reads(notebook_text(assignment, wrong.read_text()), as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path / "bundle")}}).execute()
    shown = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            shown[cell.source.split('"')[1]] = "\n".join(
                o.get("data", {}).get("text/plain", "") or o.get("text", "") for o in cell.outputs)
    assert list(shown) == [q.id for q in assignment.questions]
    public = graded(name, wrong, public_only=True)
    catalogue = catalogue_for(assignment)
    for qid, q in public.questions.items():
        if q.status == "passed":
            assert "All test cases passed" in shown[qid], (qid, shown[qid])
            continue
        assert "Test case failed" in shown[qid], (qid, shown[qid])
        for mistake in {i for c in q.cases for i in c.diagnosis or []}:
            assert catalogue.mistakes[mistake].name in shown[qid], \
                (qid, mistake, shown[qid])
