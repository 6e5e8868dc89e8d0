"""A class run's main process reads the grading processes' results and writes every report
without importing torch: it would take about a second of CPU from the grading processes while
they grade (docs/testing.md, "Where a class run's time goes")."""
from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import torch

from autograder.checking.checks import compare_tensor
from autograder.model.results import CaseResult, QuestionResult, SubmissionResult
from autograder.model.status import CaseStatus

from tests.helpers import ROOT


def _result_with_problems() -> SubmissionResult:
    """A row as a grading process sends it: cases whose problems the comparisons made, with
    their facts (values, shapes, a dtype)."""
    expected = torch.arange(6.0).reshape(2, 3)
    cases = []
    for name, got in [("values", expected + 1), ("shape", expected.T),
                      ("dtype", expected.double())]:
        problem = compare_tensor(expected, got, "the output")[0]
        cases.append(CaseResult(name, 1.0, False, CaseStatus.FAILED, message=problem.text(False),
                                kind=problem.kind, problem=problem))
    return SubmissionResult("s0001.py", {"softmax": QuestionResult("softmax", cases)},
                            student="s0001")


def test_results_and_reports_need_no_torch(tmp_path):
    (tmp_path / "rows.pickle").write_bytes(pickle.dumps([_result_with_problems()]))
    code = textwrap.dedent(f"""
        import pickle, sys
        from pathlib import Path
        from autograder.model.assignment import load_assignment
        from autograder.course.report import write_reports
        rows = pickle.loads(Path({str(tmp_path / 'rows.pickle')!r}).read_bytes())
        assert rows[0].questions["softmax"].cases[0].problem.kind == "values"
        files = write_reports(Path({str(tmp_path / 'out')!r}), load_assignment("attention"), rows)
        assert files["csv"].is_file() and files["html"].is_file()
        print("torch" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "the main process imported torch"
