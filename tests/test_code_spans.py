"""The engine's code spans (`math.sqrt(q.shape[-1])` in a hint, `scaled_dot_product_attention`
in a note) show as code in the Markdown feedback, the HTML feedback and the Actions summary,
never as escaped backticks; everything else stays literal."""
from __future__ import annotations

from markdown_it import MarkdownIt

from helpers import SUBMISSIONS

from autograder.course.report import feedback_html, feedback_markdown
from autograder.platforms.actions.run import summary_markdown
from autograder.model.safetext import html_text, markdown_text

HINT_CODE = "math.sqrt(q.shape[-1])"


def _code_spans(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    inline = [c for t in tokens for c in (t.children or [])]
    return [t.content for t in inline if t.type == "code_inline"]


def test_code_spans_are_code_and_the_rest_is_literal():
    text = "Use `x.amax(dim=dim, keepdim=True)` and `a | b`, not *this* <b>[x](y)</b>"
    md = markdown_text(text)
    assert md.startswith("Use `x.amax(dim=dim, keepdim=True)` and `a | b`, not \\*this\\*")
    assert "&lt;b&gt;\\[x\\](y)" in md
    assert _code_spans(md) == ["x.amax(dim=dim, keepdim=True)", "a | b"]
    # In a table cell, a `|` inside a span is escaped: GitHub splits cells at it.
    assert "`a \\| b`" in markdown_text(text, table=True)
    assert html_text(text) == ("Use <code>x.amax(dim=dim, keepdim=True)</code> and <code>a | b"
                               "</code>, not *this* &lt;b&gt;[x](y)&lt;/b&gt;")
    # An odd number of backticks (a quoted line that holds one): no span at all.
    odd = "in f: `s = '`' + x`"
    assert "`" not in markdown_text(odd).replace("\\`", "")
    assert "<code>" not in html_text(odd)


def test_feedback_and_summary_show_the_hint_as_code(check):
    result = check(SUBMISSIONS / "wrong" / "attention_divides_by_dk.py")
    md = feedback_markdown(result, "Attention")
    assert HINT_CODE in _code_spans(md) and "\\`" not in md
    assert "scaled_dot_product_attention" in _code_spans(md)     # the notes' function names
    summary = summary_markdown(result, "Attention")
    assert HINT_CODE in _code_spans(summary) and "\\`" not in summary
    html = feedback_html(result, "Attention")
    assert f"<code>{HINT_CODE}</code>" in html
    assert "<code>scaled_dot_product_attention</code>" in html
