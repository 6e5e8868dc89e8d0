"""One case renderer: the JSON feedback, the terminal, the Markdown files and Gradescope say the
same about every case (message, named mistake and hint, repeats folded), and the report names
mistakes by their names."""
import json

from autograder.feedback.terminal import question_lines
from autograder.platforms.gradescope.run import to_gradescope
from autograder.feedback.render import render_question
from autograder.course.report import feedback_markdown, write_reports
from autograder.feedback.contract import results_json
from autograder.model.results import CaseResult, QuestionResult, SubmissionResult
from autograder.feedback.plain import question_feedback

HINT = "likely mistake: softmax without subtracting the maximum. Subtract the maximum."
NAN = "softmax returned NaN for large logits"


def _softmax_question() -> QuestionResult:
    return QuestionResult("softmax", [
        CaseResult("small", 1.0, False, "passed"),
        CaseResult("large logits", 1.0, False, "failed", NAN, kind="values",
                   diagnosis=["softmax_no_max"], hint=HINT),
        CaseResult("huge", 2.0, True, "failed", NAN, kind="values",
                   diagnosis=["softmax_no_max"], hint=HINT),
        CaseResult("batched", 2.0, True, "error", "softmax raised IndexError: bad dim"),
    ], notes=["note: see the lesson"])


def test_render_folds_repeats_and_hints_once():
    view = render_question(_softmax_question())
    assert [(c.tag, c.name, c.passed, c.hint, c.repeats) for c in view.cases] == [
        ("case", "small", True, "", 0),
        ("case", "large logits", False, HINT, 1),
        ("hidden case", "batched", False, "", 0)]
    public = render_question(_softmax_question(), public_only=True)
    assert [c.name for c in public.cases] == ["small", "large logits"]
    assert public.cases[1].repeats == 0


def test_every_output_shows_the_message_and_the_named_mistake():
    q = _softmax_question()
    assert question_feedback(q).splitlines() == [
        f"case 'large logits': {NAN}",
        f"  {HINT}",
        "  (and 1 more case(s) with the same problem)",
        "hidden case 'batched': softmax raised IndexError: bad dim",
        "note: see the lesson"]
    assert question_lines(q) == [
        "[PART] softmax: 1/6 (partial)",
        f"       case   'large logits': {NAN}",
        f"             {HINT}",
        "             (and 1 more case(s) with the same problem)",
        "       hidden 'batched': softmax raised IndexError: bad dim",
        "       note: see the lesson"]
    result = SubmissionResult("attention.py", {"softmax": q}, student="ada")
    md = feedback_markdown(result, "Attention").splitlines()
    start = md.index("## softmax: 1 / 6 (partial)")
    assert md[start + 2:start + 8] == [
        "- ✅ case *small*",
        f"- ❌ case *large logits*: {NAN}",
        f"  - 💡 {HINT}",
        "  - (and 1 more case(s) with the same problem)",
        "- ❌ hidden case *batched*: softmax raised IndexError: bad dim",
        "- note: see the lesson"]
    data = json.loads(json.dumps(results_json("attention", [result])))
    gs = to_gradescope(data["submissions"][0], visibility="visible")
    assert gs["tests"][0]["output"].splitlines() == [
        "1/6 (partial)",
        "[pass] case 'small' (1 pt)",
        "[FAIL] case 'large logits' (1 pt)",
        f"       {NAN}",
        f"       {HINT}",
        "       (and 1 more case(s) with the same problem)",
        "[FAIL] hidden case 'batched' (2 pt)",
        "       softmax raised IndexError: bad dim",
        "note: see the lesson"]
    # Before the hidden results are released, the public summary names the mistake too.
    delayed = to_gradescope(data["submissions"][0], visibility="after_published")
    summary = delayed["output"].splitlines()
    i = summary.index("softmax: 1/2 public cases pass")
    assert summary[i + 1:i + 3] == [f"  case 'large logits': {NAN}", f"    {HINT}"]
    assert "batched" not in delayed["output"]


def test_report_lists_named_mistakes_by_name(assignment, tmp_path):
    q = _softmax_question()
    results = [SubmissionResult("a.py", {"softmax": q}, student="ada"),
               SubmissionResult("b.py", {"softmax": _softmax_question()}, student="bob")]
    files = write_reports(tmp_path, assignment, results)
    html = files["html"].read_text()
    section = html.split("named mistakes:")[1].split("</td>")[0]
    assert "softmax without subtracting the maximum</span> (2)" in section
    assert "softmax_no_max" not in section
