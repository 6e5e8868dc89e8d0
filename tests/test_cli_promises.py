"""Promises of the commands the README and docs/ describe that only a run of the command shows:
the per-submission time limit, `diagnose-eval`'s exit status,
`python -m autograder.platforms.gradescope --from-json`, the `[gradescope] hidden_visibility`
key, and a smoke run of `autograder benchmark`."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (QUESTIONS, ROOT, SUBMISSIONS, cli_in_process, copy_assignment,
                     read_header, run_cli)
from autograder.feedback.plain import question_feedback

HONEST = (SUBMISSIONS / "hostile" / "honest.py").read_text()
TEMPLATE = ROOT / "student_template" / "attention.py"


# ------------------------------------------------------------------ the per-submission limit

SLOW_FIRST_CALLS = """

import time as _time
_slept = set()


def _slow_once(name):
    # Each function is slow once only: every question stays well within its own limit.
    if name not in _slept:
        _slept.add(name)
        _time.sleep(3)


def scaled_dot_product_attention(q, k, v, mask=None):
    _slow_once("attention")
    return _attention(q, k, v, mask)


def causal_mask(T):
    _slow_once("mask")
    return _causal_mask(T)
"""


def test_the_whole_submission_has_a_time_limit_of_its_own(assignment, sandbox, tmp_path):
    """Two questions take 3 s each, well within their own 20 s, but together more than the
    submission's 5 s: the second is stopped by the submission's limit, says so, and nothing
    after it is graded as passed. Without that limit every question would pass."""
    from autograder.grading.grade import grade_submission

    path = tmp_path / "attention.py"
    path.write_text(HONEST + SLOW_FIRST_CALLS)
    limits = assignment.limits.override({"question_seconds": 20, "submission_seconds": 5})
    result = grade_submission(assignment, path, sandbox, limits)
    q = result.questions
    assert [q[x].status for x in ("softmax", "attention")] == ["passed", "passed"]
    assert q["mask"].status == "timeout", question_feedback(q["mask"])
    assert "allowed for the whole submission" in question_feedback(q["mask"])
    later = QUESTIONS[QUESTIONS.index("mask") + 1:]
    assert not any(q[x].status == "passed" for x in later), \
        {x: q[x].status for x in later}


# ------------------------------------------------------------------ diagnose-eval

def _corpus(tmp_path: Path, diagnosis: str) -> Path:
    corpus = tmp_path / f"corpus-{diagnosis}"
    (corpus / "wrong").mkdir(parents=True)
    (corpus / "correct").mkdir()
    wrong = SUBMISSIONS / "wrong" / "attention_divides_by_dk.py"
    assert read_header(wrong)["diagnosis"] == "scale_by_dk"
    (corpus / "wrong" / wrong.name).write_text(
        wrong.read_text().replace("# diagnosis: scale_by_dk", f"# diagnosis: {diagnosis}"))
    shutil.copy(SUBMISSIONS / "correct" / "reference_style.py", corpus / "correct")
    return corpus


def test_diagnose_eval_exits_non_zero_when_a_target_is_missed(tmp_path):
    # The command's exit status as `main` returns it (in this process: no torch to start).
    ok = cli_in_process("diagnose-eval", "-a", "attention", "--corpus",
                        str(_corpus(tmp_path, "scale_by_dk")))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "names the right mistake: 1/1" in ok.stdout
    # The same file, its header now naming a mistake it does not make: 0% named right and
    # one wrong name, both targets missed.
    missed = cli_in_process("diagnose-eval", "-a", "attention", "--corpus",
                            str(_corpus(tmp_path, "no_scaling")))
    assert missed.returncode != 0, missed.stdout
    assert "names the right mistake: 0/1" in missed.stdout


def test_diagnose_eval_never_counts_a_file_that_keeps_every_point_as_named(tmp_path):
    """A "wrong" file no case catches (here a correct solution whose header says the catalogue
    knows no mistake in it) is a miss, not "naming nothing is right"."""
    corpus = tmp_path / "corpus"
    (corpus / "wrong").mkdir(parents=True)
    (corpus / "correct").mkdir()
    (corpus / "wrong" / "uncaught.py").write_text(
        "# diagnosis: none\n" + (SUBMISSIONS / "correct" / "reference_style.py").read_text())
    r = cli_in_process("diagnose-eval", "-a", "attention", "--corpus", str(corpus))
    assert r.returncode != 0, r.stdout
    assert "names the right mistake: 0/1" in r.stdout
    assert "MISS uncaught.py" in r.stdout and "no case catches it" in r.stdout


def test_diagnose_eval_fails_on_an_internal_error_in_the_corpus(tmp_path):
    """A public case whose snapshot is gone is an internal error of the grader on every
    submission: the evaluation says so and exits non-zero, however well the rest is named."""
    adir = copy_assignment(tmp_path / "attention", "attention")
    snapshots = adir / "snapshots" / "block.json"
    entries = json.loads(snapshots.read_text())
    snapshots.write_text(json.dumps({k: v for k, v in entries.items()
                                     if k != sorted(entries)[0]}))
    r = cli_in_process("diagnose-eval", "-a", str(adir), "--corpus",
                       str(_corpus(tmp_path, "scale_by_dk")))
    assert r.returncode != 0, r.stdout
    assert "INTERNAL ERROR of the grader" in r.stdout
    assert "attention_divides_by_dk.py: block" in r.stdout
    assert "reference_style.py: block" in r.stdout


# ------------------------------------------------------------------ Gradescope conversion

@pytest.fixture(scope="module")
def grades_json(tmp_path_factory) -> Path:
    """`autograder grade --json` of the template (nothing attempted: fast)."""
    folder = tmp_path_factory.mktemp("gs")
    shutil.copy(TEMPLATE, folder / "attention.py")
    out = folder / "grades.json"
    r = cli_in_process("grade", "-a", "attention", str(folder / "attention.py"), "--json",
                       str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def _convert(assignment: str, grades: Path, out: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "autograder.platforms.gradescope", "-a", assignment,
                        "--from-json", str(grades), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(out.read_text())


def _has_hidden(question: str) -> bool:
    text = (ROOT / "assignments" / "attention" / "tests" / f"{question}.py").read_text()
    return bool(re.search(r"hidden=True", text))


@pytest.mark.parametrize("visibility", ["after_published", "after_due_date", "hidden",
                                        "visible"])
def test_from_json_writes_results_with_the_configured_hidden_visibility(grades_json,
                                                                        tmp_path, visibility):
    if visibility == "after_published":
        assignment = "attention"        # the bundled assignment's own setting
        toml = (ROOT / "assignments" / "attention" / "assignment.toml").read_text()
        assert 'hidden_visibility = "after_published"' in toml
    else:
        folder = copy_assignment(tmp_path / "a")
        toml = (folder / "assignment.toml").read_text()
        (folder / "assignment.toml").write_text(toml.replace(
            'hidden_visibility = "after_published"', f'hidden_visibility = "{visibility}"'))
        assignment = str(folder)
    results = _convert(assignment, grades_json, tmp_path / "results.json")
    source = json.loads(grades_json.read_text())["submissions"][0]
    assert results["score"] == source["score"] == 0
    tests = {t["name"]: t for t in results["tests"]}
    assert sorted(tests) == sorted(QUESTIONS)
    for qid, t in tests.items():
        assert t["max_score"] == source["questions"][qid]["max_score"]
        assert t["status"] == "failed" and t["score"] == 0
        # Questions with hidden cases take the key's visibility; the bundled questions all have
        # some, so every test here shows the setting.
        assert _has_hidden(qid)
        assert t["visibility"] == visibility, (qid, t["visibility"])


# ------------------------------------------------------------------ benchmark

def test_benchmark_smoke_run(tmp_path):
    """The smallest benchmark: a class of 4, no otter sample, one timing of each; it finishes
    and reports a rate and a peak memory for the class it graded."""
    r = run_cli("benchmark", "-a", "attention", "--n", "4", "--otter-sample", "0", "--jobs",
                "1", "--repeats", "1", "--class-runs", "1", timeout=1200)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert re.search(r"submissions/s", r.stdout), r.stdout
    assert re.search(r"peak", r.stdout, re.I), r.stdout
    # Both figures beside their peers, with their targets (a benchmark, not a timed test).
    table = r.stdout.split("class run (--out --feedback)", 1)[1]
    assert "otter run: not measured" in table and ">= 10/s" in table
    assert "check of a correct file" in table and "import torch:" in table and "<= 1.2" in table
