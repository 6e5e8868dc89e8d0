"""The question files are genuine otter exception-based test files, usable in-process."""
import importlib.util

import pytest
from otter.test_files.exception_test import ExceptionTestFile

from helpers import QUESTIONS, ROOT, SUBMISSIONS


def _module(path, name="attention"):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


@pytest.mark.parametrize("qid", QUESTIONS)
def test_otter_parses_and_runs_question_files(qid, assignment):
    tf = ExceptionTestFile.from_file(str(assignment.question(qid).test_file))
    assert tf.name == qid and tf.test_cases
    assert {tc.hidden for tc in tf.test_cases} == {True, False}
    src = (assignment.question(qid).test_file).read_text()
    assert "OK_FORMAT = False" in src
    tf.run(vars(_module(ROOT / "reference" / "attention.py")))
    assert all(r.passed for r in tf.test_case_results), [r.message for r in tf.test_case_results]
    assert tf.grade == 1


def test_otter_reports_a_readable_failure(assignment):
    tf = ExceptionTestFile.from_file(str(assignment.question("attention").test_file))
    tf.run(vars(_module(SUBMISSIONS / "wrong" / "attention_divides_by_dk.py")))
    failed = [r for r in tf.test_case_results if not r.passed]
    assert failed
    assert "values differ by up to" in failed[0].message
    assert 0 < tf.grade < 1


def test_otter_passes_none_for_missing_functions(assignment):
    tf = ExceptionTestFile.from_file(str(assignment.question("softmax").test_file))
    tf.run({})
    assert not any(r.passed for r in tf.test_case_results)
    assert "is not defined in your file" in tf.test_case_results[0].message
