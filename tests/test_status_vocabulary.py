"""One status vocabulary: the strings of the JSON contract, integrity and the grader's own
failures kept apart from the student's errors, and every output showing them."""
import json

from helpers import ROOT, copy_assignment

from autograder.model.assignment import load_assignment
from autograder.feedback.terminal import question_lines, summary_table
from autograder.grading.grade import check_in_process
from autograder.feedback.contract import results_json
from autograder.model.results import CaseResult, QuestionResult, SubmissionResult
from autograder.model.status import CaseStatus, QuestionStatus, question_status


def test_values_are_the_strings_of_the_json_contract():
    assert [s.value for s in CaseStatus] == [
        "passed", "failed", "not_attempted", "error", "timeout", "memory", "forbidden",
        "integrity", "internal_error", "missing"]
    assert [s.value for s in QuestionStatus] == [
        "passed", "partial", "failed", "not attempted", "error", "timeout", "memory limit",
        "forbidden call", "integrity", "internal error", "missing"]
    assert json.dumps({"s": QuestionStatus.MEMORY, "c": [CaseStatus.NOT_ATTEMPTED]}) == \
        '{"s": "memory limit", "c": ["not_attempted"]}'


def test_integrity_and_internal_errors_decide_the_question():
    assert question_status(["passed", "integrity", "forbidden"], 1.0) == "integrity"
    assert question_status(["passed", "internal_error", "failed"], 1.0) == "internal error"
    assert question_status(["passed", "error"], 1.0) == "partial"
    assert question_status(["error", "failed"], 0.0) == "error"
    assert question_status(["not_attempted"], 0.0) == "not attempted"
    assert question_status([], 0.0) == "passed"


def test_flagged_and_internal_rows_in_the_terminal_and_json():
    flagged = QuestionResult("softmax", [CaseResult(
        "a", 2.0, False, "integrity",
        "integrity: this submission modifies the grader; flagged for review")])
    broken = QuestionResult("mask", [CaseResult(
        "b", 1.0, False, "internal_error", "the grader could not run this case (x)")])
    result = SubmissionResult("s.py", {"softmax": flagged, "mask": broken}, student="ada")
    assert question_lines(flagged)[0] == "[FLAG] softmax: 0/2 (integrity)"
    assert question_lines(broken)[0] == "[IERR] mask: 0/1 (internal error)"
    assert summary_table([result], ["softmax", "mask"]).splitlines()[2] == \
        "ada         flag 0/2  ierr 0/1     0/3"
    data = json.loads(json.dumps(results_json("a", [result])))["submissions"][0]["questions"]
    assert (data["softmax"]["status"], data["softmax"]["cases"][0]["status"]) == \
        ("integrity", "integrity")
    assert (data["mask"]["status"], data["mask"]["cases"][0]["status"]) == \
        ("internal error", "internal_error")


def test_a_grader_failure_is_an_internal_error_with_its_message(tmp_path):
    """A missing snapshot is the instructor's problem: the reference itself gets the internal
    status on those cases, with the reason, never the student's `error`."""
    dest = copy_assignment(tmp_path / "assignments" / "attention_copy")
    (dest / "snapshots" / "softmax.json").unlink()
    result = check_in_process(load_assignment(dest), ROOT / "reference" / "attention.py",
                              questions=["softmax", "attention"])
    softmax = result.questions["softmax"]
    assert softmax.status == QuestionStatus.INTERNAL_ERROR
    assert {c.status for c in softmax.cases} == {CaseStatus.INTERNAL_ERROR}
    assert all(c.kind == "grader" for c in softmax.cases)
    assert softmax.cases[0].message == (
        "the grader could not run this case (snapshot file softmax.json is missing: run "
        "`autograder snapshot`); tell your instructor")
    assert result.questions["attention"].status == QuestionStatus.PASSED
