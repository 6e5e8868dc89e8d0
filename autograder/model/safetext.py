"""Student-controlled text made inert for each output: terminal, Markdown and CSV.

Names come from folder names and Gradescope metadata; messages and quoted code come from the
student's own process. None of it may steer the output it lands in: move the terminal's cursor,
add a row to a table, a heading or a total to a feedback file, or a formula to a spreadsheet.
(The HTML report is escaped by jinja2's autoescape.) The engine's own texts mark code with
backticks; `markdown_text` and `html_text` show those spans as code, the rest as above.
"""
from __future__ import annotations

import html
import os
import re
from pathlib import Path

# C0 controls, DEL and C1 controls; plus the Unicode line and paragraph separators, which some
# terminals and Markdown renderers also break lines at.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control(match: re.Match) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xff else f"\\u{code:04x}"


def visible(text: object) -> str:
    """`text` on one line with every control character shown as an escape (ESC -> \\x1b)."""
    return _CONTROL.sub(_escape_control, str(text))


def shown_path(path: object) -> str:
    """A path as every command prints it: relative to the current folder when it is inside
    it, else absolute; on one line (`visible`)."""
    absolute = Path(os.path.abspath(Path(path).expanduser()))
    try:
        text = absolute.relative_to(Path.cwd()).as_posix() or "."
    except ValueError:
        text = str(absolute)
    # A file name need not be valid UTF-8: its undecodable bytes print as U+FFFD.
    return visible(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))


# Characters that start Markdown or HTML syntax inline (emphasis, code spans, links and images
# (which need `[`), tables, strikethrough, email autolinks, entities, raw HTML, headings).
# Line-start syntax cannot occur: `visible` has removed every line break, and student text
# never starts a line.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]#|~@])")
_MD_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|www)([:.])")


def markdown_inline(text: object) -> str:
    """`text` as literal inline Markdown: shown as written, never interpreted."""
    out = _MD_SPECIAL.sub(r"\\\1", visible(text))
    out = re.sub("[&<>]", lambda m: _MD_HTML[m.group()], out)
    return _AUTOLINK.sub(r"\1\\\2", out)   # "http\://x" is not turned into a link


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading apostrophe on text that would start a
    formula. Numbers (written by the grader itself) stay numbers."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, (int, float)):
        return f"{value:g}"
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


# Code spans of the engine's texts (`x.amax(dim=dim, keepdim=True)` in a hint, `masked_fill` in
# a message): shown as code in Markdown and HTML, never as escaped backticks. A span holds no
# backtick and no line break; its content is literal in both outputs (no emphasis, link, HTML
# or entity is recognised inside), so whatever text it holds stays inert.
_CODE_SPAN = re.compile(r"`([^`]+)`")


def _spans(text: object) -> list[tuple[bool, str]]:
    """(is code, text) pieces of `text` on one line (`visible`). A text with an odd number of
    backticks (a quoted line of the student's that holds one) has no spans: which backticks
    pair up is not clear, so it is all shown literally."""
    s, out, pos = visible(text), [], 0
    if s.count("`") % 2:
        return [(False, s)]
    for m in _CODE_SPAN.finditer(s):
        if m.group(1).strip():
            out += [(False, s[pos:m.start()]), (True, m.group(1))]
            pos = m.end()
    return out + [(False, s[pos:])]


def markdown_text(text: object, *, table: bool = False) -> str:
    """An engine text (a message, a hint, a note) as inline Markdown: its code spans as code,
    everything else literal (`markdown_inline`). In a table cell (`table`), a `|` inside a code
    span is escaped too, as GitHub's tables split cells at it even there."""
    out = []
    for code, piece in _spans(text):
        if code:
            out.append("`" + (piece.replace("|", "\\|") if table else piece) + "`")
        else:
            out.append(markdown_inline(piece))
    return "".join(out)


def html_text(text: object) -> str:
    """An engine text as HTML: escaped, its code spans in `<code>` elements."""
    return "".join(f"<code>{html.escape(p)}</code>" if code else html.escape(p)
                   for code, p in _spans(text))
