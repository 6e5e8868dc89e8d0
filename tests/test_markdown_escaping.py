"""feedback/*.md cannot be forged: a student's name, exception messages and quoted code show as
written, and add no heading, total, link, HTML or code span to the file."""
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from helpers import MAX_SCORE, WRITTEN_POINTS
from hostile_names import MARKDOWN_FORGER as FORGER
from hostile_names import MARKDOWN_NAME as NAME
from hostile_names import MARKDOWN_RAISE as RAISE
from hostile_names import forger_scores, forger_status

from autograder.course.report import safe_name

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
    most = sum(m for _, m in scores.values()) + sum(WRITTEN_POINTS.values())
    total = f"{sum(s for s, _ in scores.values()):g} / {most:g}"
    assert [x for x in lines if "Total" in x and not x.startswith(("- ❌", "  - \\| "))] == \
        [f"**Total: {total}**"]
    line = (feedback.parent.parent / "class" / FORGER / "attention.py").read_text() \
        .splitlines().index(f"    {RAISE}") + 1
    i = lines.index("## softmax: 0 / 6 (error)")
    assert lines[i + 2:i + 5] == [
        f"- ❌ case *lesson: softmax(\\[1, 2, 3\\])*: {FORGED} (line {line} of attention.py, "
        f"in softmax: {QUOTED})",
        FORGED_MORE,
        "  - (and 5 more case(s) with the same problem)"]
    tokens = _rendered(text)
    kinds = [t.type for t in tokens]
    assert "html_inline" not in kinds and "html_block" not in kinds
    assert "link_open" not in kinds and "code_inline" not in kinds
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"] + ["h2"] * 10
    assert kinds.count("strong_open") == 1          # the real total only


def test_a_name_is_shown_as_written(feedback: Path):
    text = (feedback / f"{safe_name(NAME)}.md").read_text()
    assert text.splitlines()[0] == f"# {TITLE}: feedback for {NAME_IN_FILE}"
    assert f"**Total: 35 / {MAX_SCORE}**" in text.splitlines()   # the honest student's own total
    tokens = _rendered(text)
    kinds = [t.type for t in tokens]
    assert "html_inline" not in kinds and "link_open" not in kinds
    assert kinds.count("strong_open") == 1
    html = MarkdownIt("commonmark").render(text)
    assert f"<h1>{TITLE}: feedback for {NAME_IN_HTML}</h1>" in html
    assert "<a " not in html and "<b " not in html
    honest = (feedback / "honest.md").read_text()
    assert f"**Total: 35 / {MAX_SCORE}**" in honest.splitlines() and "❌" not in honest
