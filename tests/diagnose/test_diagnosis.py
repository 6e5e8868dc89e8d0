"""Named mistakes: feedback says which known mistake a failing case shows, only when it is sure."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS, copy_assignment, read_header, run_cli

from autograder import diagnose
from autograder.model.assignment import load_assignment
from autograder.yardsticks.evaluate import NONE, evaluate, wanted
from autograder.feedback.terminal import question_lines
from autograder.feedback.contract import results_json
from autograder.feedback.plain import question_feedback

WRONG = sorted((SUBMISSIONS / "wrong").glob("*.py"))
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))
DIVIDES_BY_DK = SUBMISSIONS / "wrong" / "attention_divides_by_dk.py"


@pytest.fixture(scope="module")
def evaluation(corpus_results):
    """The diagnosis evaluation over the corpus as the suite graded it once (conftest.py)."""
    graded = {}

    def grade_once(path):
        graded[path.name] = corpus_results[path.name]
        return graded[path.name]

    ev = evaluate(SUBMISSIONS, grade_once)
    ev.graded = graded
    return ev


def test_evaluation_meets_the_targets(evaluation):
    n = len(evaluation.wrong)
    assert n >= 30 and len(evaluation.correct) >= 5
    assert evaluation.named_right / n >= 0.9, evaluation.report()
    assert evaluation.named_wrong == 0, evaluation.report()
    assert evaluation.correct_diagnosed == 0, evaluation.report()
    assert evaluation.meets()
    # docs/naming-mistakes.md's row for this corpus gives the figures the command prints.
    row = next(line for line in (ROOT / "docs" / "naming-mistakes.md").read_text().splitlines()
               if line.startswith("| torch `wrong/`"))
    cases = re.search(r"failing cases of wrong submissions with a diagnosis: (\d+)/(\d+)",
                      evaluation.report()).groups()
    assert f"({n} files" in row and f"| {evaluation.named_right}/{n} name the right" in row, row
    assert f"{cases[0]} of {cases[1]} failing cases" in row, (row, evaluation.report())
    correct = next(line for line in (ROOT / "docs" / "naming-mistakes.md").read_text()
                   .splitlines() if line.startswith("| torch `correct/`"))
    assert f"({len(evaluation.correct)} files)" in correct, correct


def test_corpus_headers_name_catalogue_mistakes(assignment):
    known = set(diagnose.catalogue_for(assignment).mistakes)
    headers = [read_header(f).get("diagnosis") for f in WRONG]
    assert all(headers), [f.name for f, w in zip(WRONG, headers) if not w]
    ids = set().union(*(wanted(h) for h in headers))
    assert ids - {NONE} <= known, ids - known
    assert len(ids - {NONE}) >= 30    # distinct named mistakes in the corpus
    assert headers.count(NONE) >= 3   # and some the catalogue does not know


@pytest.mark.parametrize("path", WRONG, ids=lambda p: p.stem)
def test_wrong_submission_is_diagnosed(path, evaluation):
    want = wanted(read_header(path)["diagnosis"])
    named = diagnose.diagnoses(evaluation.graded[path.name])
    if want == {NONE}:
        assert not named, f"{path.name} makes a mistake the catalogue does not know: {named}"
    else:
        # Every mistake the file makes is named, and nothing else: naming nothing fails.
        assert named == want, f"{path.name} names {named or 'nothing'}, expected {want}"


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_correct_submission_gets_no_diagnosis(path, evaluation):
    result = evaluation.graded[path.name]
    assert not diagnose.diagnoses(result)
    assert all(not c.hint for q in result.questions.values() for c in q.cases)


def test_divide_by_dk_gets_the_right_hint(evaluation, assignment):
    result = evaluation.graded[DIVIDES_BY_DK.name]
    q = result.questions["attention"]
    failing = [c for c in q.cases if c.status != "passed"]
    assert failing and all(c.diagnosis == ["scale_by_dk"] for c in failing)
    hint = "likely mistake: scores divided by d_k instead of sqrt(d_k)."
    assert all(c.hint.startswith(hint) for c in failing)
    assert "math.sqrt(q.shape[-1])" in failing[0].hint
    # next to the failing case, in both renderings, and in the JSON for the class report
    text = question_feedback(q)
    assert text.index(failing[0].message) < text.index(hint)
    assert any(hint in line for line in question_lines(q))
    cases = results_json("attention", [result])["submissions"][0]["questions"]["attention"]
    assert cases["cases"][0]["diagnosis"] == ["scale_by_dk"]
    # a hidden case names the mistake, never the hidden values
    hidden = [c for c in failing if c.hidden]
    assert hidden and all(not re.search(r"\d\.\d", c.hint) for c in hidden)
    # the passing questions say nothing
    assert not any(c.hint for c in result.questions["softmax"].cases)


def test_mistake_counts_per_question(evaluation):
    results = list(evaluation.graded.values())
    counts = diagnose.mistake_counts(results)
    assert counts["attention"]["scale_by_dk"] == 1
    assert counts["softmax"]["inplace_input"] == 1
    assert counts["block"]["detached_gradient"] == 2     # numpy round trips in two functions
    assert "split_heads" not in counts or "scale_by_dk" not in counts["split_heads"]
    as_json = results_json("attention", results)["submissions"]
    assert diagnose.mistake_counts(as_json) == counts


def test_engine_has_no_assignment_specific_code(assignment):
    files = sorted((ROOT / "autograder" / "diagnose").glob("*.py"))
    assert len(files) >= 5
    for path in files:
        source = path.read_text()
        for name in assignment.api:
            assert name not in source, f"{path.name} names {name}"


# ------------------------------------------------------------------ catalogues are assignment data

def _assignment_with_catalogue(tmp_path: Path, catalogue_source: str):
    """A copy of the attention assignment whose mistakes.py is `catalogue_source`."""
    dest = copy_assignment(tmp_path / "assignments" / "attention_copy")
    (dest / "mistakes.py").write_text(catalogue_source)
    return load_assignment(dest)


TINY = '''
from autograder.diagnose import Catalogue
catalogue = Catalogue()

@catalogue.variant("my_dk", "scaled_dot_product_attention", name="my own name for it",
                   hint="Use the square root.")
def _(ref, q, k, v, mask=None):
    w = ref.softmax(q @ k.transpose(-2, -1) / q.shape[-1], dim=-1)
    return w @ v, w
'''


def test_a_new_mistake_needs_no_engine_change(tmp_path, sandbox):
    from autograder.grading.grade import grade_submission

    assignment = _assignment_with_catalogue(tmp_path, TINY)
    result = grade_submission(assignment, DIVIDES_BY_DK, sandbox, questions=["attention"])
    cases = [c for c in result.questions["attention"].cases if c.status != "passed"]
    assert cases and all(c.diagnosis == ["my_dk"] for c in cases)
    assert "likely mistake: my own name for it. Use the square root." in \
        question_feedback(result.questions["attention"])


def test_ambiguous_evidence_names_nothing(tmp_path, sandbox):
    from autograder.grading.grade import grade_submission

    twice = TINY + TINY.split("catalogue = Catalogue()")[1].replace('"my_dk"', '"my_dk_again"')
    assignment = _assignment_with_catalogue(tmp_path, twice)
    assert len(diagnose.catalogue_for(assignment).mistakes) == 2
    result = grade_submission(assignment, DIVIDES_BY_DK, sandbox, questions=["attention"])
    q = result.questions["attention"]
    assert q.score < q.max_score
    assert not diagnose.diagnoses(result)
    assert "likely mistake" not in question_feedback(q)
    assert "values differ" in question_feedback(q)        # the plain mismatch message stays


def test_a_broken_catalogue_is_reported_not_fatal(tmp_path, sandbox, capfd):
    from autograder.grading.grade import grade_submission

    assignment = _assignment_with_catalogue(tmp_path, "catalogue = 1\n")
    with pytest.raises(Exception, match="Catalogue"):
        diagnose.catalogue_for(assignment)
    result = grade_submission(assignment, DIVIDES_BY_DK, sandbox, questions=["attention"])
    assert result.questions["attention"].score < result.questions["attention"].max_score
    assert not diagnose.diagnoses(result)
    assert "diagnosis disabled" in capfd.readouterr().err


def test_cli_diagnose_eval(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "wrong").mkdir(parents=True)
    (corpus / "correct").mkdir()
    shutil.copy(DIVIDES_BY_DK, corpus / "wrong")
    shutil.copy(SUBMISSIONS / "wrong" / "mask_ignored.py", corpus / "wrong")
    shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", corpus / "correct")
    done = run_cli("diagnose-eval", "-a", "attention", "--corpus", str(corpus))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "names the right mistake: 2/2 (100.0%" in done.stdout
    assert "names a wrong mistake:   0/2" in done.stdout
    assert "correct submissions with a diagnosis: 0/1" in done.stdout
