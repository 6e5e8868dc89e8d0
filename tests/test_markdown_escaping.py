"""feedback/*.md cannot be forged: a student's name, exception messages and quoted code show as
written, and add no heading, total, link, HTML or code span of their own to the file (the
engine's own code spans, in hints and notes, show as code)."""
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from helpers import AUTOGRADED_MAX, MAX_SCORE, WRITTEN_POINTS, cases_of, max_points
from hostile_names import MARKDOWN_FORGER as FORGER
from hostile_names import MARKDOWN_NAME as NAME
from hostile_names import MARKDOWN_RAISE as RAISE
from hostile_names import forger_scores, forger_status

from autograder.course.report import safe_name
from autograder.feedback.totals import Totals

NAME_IN_FILE = ("\\# Eve \\*\\*Total: 100%\\*\\* &lt;b onmouseover=alert(1)&gt;x "
                "\\[y\\](javascript:alert(1))")
NAME_IN_HTML = "# Eve **Total: 100%** &lt;b onmouseover=alert(1)&gt;x [y](javascript:alert(1))"
TITLE = "Attention from scratch (PyTorch)"
# The message as the file holds it: every Markdown and HTML character escaped. Its first line
# stays on the case's line; a further line goes on a line of its own inside that case's item,
# marked as the error's continuation (`| `), never a line that stands alone.
FORGED = "softmax raised ValueError: \\# Total: 100/100"
FORGED_MORE = ("  - \\| \\*\\*Total: 100 / 100\\*\\*&lt;script&gt;alert(1)&lt;/script&gt;"
               "\\[z\\](javascript:alert(1)) \\` www\\.example.com")
QUOTED = ("\\`raise ValueError(\"\\\\n\\# Total: 100/100\\\\n\\*\\*Total: 100 / 100\\*\\*"
          "&lt;script&gt;alert(1)&lt;/script&gt;\\[z\\](javascript:alert(1)) \\` "
          "www\\.example.com\")\\`")


@pytest.fixture(scope="module")
def feedback(hostile_names) -> Path:
    return hostile_names["out"] / "feedback"      # `grade --out --feedback`, run once


def _rendered(text: str) -> list:
    md = MarkdownIt("commonmark")        # raw HTML allowed, as most viewers do
    tokens = md.parse(text)
    inline = [child for t in tokens for child in (t.children or [])]
    return tokens + inline


def test_messages_and_quoted_code_add_nothing(feedback: Path):
    text = (feedback / f"{FORGER}.md").read_text()
    lines = text.splitlines()
    scores = forger_scores()
    assert [x for x in lines if x.startswith("#")] == [
        f"# {TITLE}: feedback for {FORGER}",
        *(f"## {q}: {s:g} / {m:g} ({forger_status(s, m)})" for q, (s, m) in scores.items()),
        *(f"## {q} (written): 0/{m} (not answered: 0 points)"
          for q, m in WRITTEN_POINTS.items())]
    total = Totals(sum(s for s, _ in scores.values()), sum(m for _, m in scores.values()), 0,
                   sum(WRITTEN_POINTS.values())).text()
    assert [x for x in lines if "Total" in x and not x.startswith(("- ❌", "  - \\| "))] == \
        [f"**Total: {total}**"]
    line = (feedback.parent.parent / "class" / FORGER / "attention.py").read_text() \
        .splitlines().index(f"    {RAISE}") + 1
    i = lines.index(f"## softmax: 0 / {max_points('softmax'):g} (error)")
    assert lines[i + 2:i + 5] == [
        f"- ❌ case *lesson: softmax(\\[1, 2, 3\\])*: {FORGED} (line {line} of attention.py, "
        f"in softmax: {QUOTED})",
        FORGED_MORE,
        f"  - (and {len(cases_of('softmax')) - 1} more case(s) with the same problem)"]
    tokens = _rendered(text)
    kinds = [t.type for t in tokens]
    assert "html_inline" not in kinds and "html_block" not in kinds
    assert "link_open" not in kinds
    # Code spans are the engine's (a function's name in a note, a fix in a hint), never made of
    # the forged message (whose quoted line holds a backtick: it is all shown literally).
    spans = [t.content for t in tokens if t.type == "code_inline"]
    assert not any(w in c for c in spans for w in ("Total", "script", "javascript", "raise"))
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"] + ["h2"] * 10
    assert kinds.count("strong_open") == 1          # the real total only


def test_a_name_is_shown_as_written(feedback: Path):
    text = (feedback / f"{safe_name(NAME)}.md").read_text()
    assert text.splitlines()[0] == f"# {TITLE}: feedback for {NAME_IN_FILE}"
    # The honest student's own total (no written answer: 0 of the written points).
    honest_total = Totals(AUTOGRADED_MAX, AUTOGRADED_MAX, 0, MAX_SCORE - AUTOGRADED_MAX).text()
    assert f"**Total: {honest_total}**" in text.splitlines()
    tokens = _rendered(text)
    kinds = [t.type for t in tokens]
    assert "html_inline" not in kinds and "link_open" not in kinds
    assert kinds.count("strong_open") == 1
    html = MarkdownIt("commonmark").render(text)
    assert f"<h1>{TITLE}: feedback for {NAME_IN_HTML}</h1>" in html
    assert "<a " not in html and "<b " not in html
    honest = (feedback / "honest.md").read_text()
    assert f"**Total: {honest_total}**" in honest.splitlines()
    assert "❌" not in honest
