"""The two anchors: the reference scores full marks, the untouched template scores 0."""
from helpers import QUESTIONS, ROOT, snapshot_differences
from autograder.feedback.plain import question_feedback


def test_reference_scores_full_marks_in_the_sandbox(grade):
    result = grade(ROOT / "reference" / "attention.py")
    assert result.error is None
    assert list(result.questions) == QUESTIONS
    for q in result.questions.values():
        assert q.status == "passed", question_feedback(q)
        assert q.score == q.max_score > 0
    # Every question has public and hidden cases.
    for q in result.questions.values():
        assert any(c.hidden for c in q.cases) and any(not c.hidden for c in q.cases)


def test_template_is_not_attempted_everywhere(grade):
    result = grade(ROOT / "student_template" / "attention.py")
    assert result.score == 0 and result.error is None
    for q in result.questions.values():
        assert q.status == "not attempted", question_feedback(q)
        assert all(c.status == "not_attempted" for c in q.cases)


def test_reference_passes_public_checks_in_process(check):
    result = check(ROOT / "reference" / "attention.py")
    assert all(q.status == "passed" for q in result.questions.values())
    assert not any(c.hidden for q in result.questions.values() for c in q.cases)


def test_template_public_checks_say_not_attempted(check):
    result = check(ROOT / "student_template" / "attention.py")
    assert {q.status for q in result.questions.values()} == {"not attempted"}


def test_public_cases_use_lesson_examples(assignment):
    """The lesson's worked examples are public cases, with their printed numbers."""
    import json

    snaps = assignment.snapshot_dir
    att = json.loads((snaps / "attention.json").read_text())["lesson_three_tokens"]
    weights = att["output"]["items"][1]["data"]
    assert [round(w, 3) for w in weights] == [0.401, 0.198, 0.401, 0.198, 0.401, 0.401,
                                              0.248, 0.248, 0.503]
    out = att["output"]["items"][0]["data"]
    assert [round(o, 3) for o in out] == [0.802, 0.599, 0.599, 0.802, 0.752, 0.752]
    sm = json.loads((snaps / "softmax.json").read_text())
    assert [round(v, 3) for v in sm["lesson_small"]["output"]["data"]] == [0.09, 0.245, 0.665]
    assert [round(v, 3) for v in sm["lesson_large"]["output"]["data"]] == [0.0, 0.0, 1.0]
    masked = json.loads((snaps / "mask.json").read_text())["lesson_masked_weights"]
    assert [round(v, 2) for v in masked["output"]["items"][1]["data"]] == [
        1.0, 0.0, 0.0, 0.33, 0.67, 0.0, 0.25, 0.25, 0.5]


def test_snapshots_are_up_to_date(tmp_path, assignment):
    """`autograder snapshot` regenerates exactly the committed files."""
    import json

    from autograder.checking.context import Mode, Recording
    from autograder.grading.runner import grade_functions

    ref = assignment.load_reference()
    env = {n: getattr(ref, n) for n in assignment.api}
    recording = Recording()
    grade_functions(assignment, "reference", lambda q: env, include_hidden=False, mode=Mode.RECORD,
                    recording=recording)
    for qid, entries in recording.store.items():
        committed = json.loads((assignment.snapshot_dir / f"{qid}.json").read_text())
        assert snapshot_differences(json.loads(json.dumps(entries)), committed,
                                    recording.tolerances.get(qid)) == [], qid
