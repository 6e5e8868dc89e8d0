"""Student-controlled text made inert for each output: terminal, Markdown, CSV and HTML.

Names come from folder names and Gradescope metadata; messages and quoted code come from the
student's own process; written answers are the student's prose. None of it may steer the output
it lands in: move the terminal's cursor, add a row to a table, a heading or a total to a
feedback file, or a formula to a spreadsheet; nor show other than what it is. Unicode format
characters (category Cf: the bidirectional overrides, embeddings, isolates and marks, the
zero-width spaces and joiners, the byte order mark, tags...) reorder or hide the text around
them while showing nothing themselves (a folder shown as `attention-alice` need not be
alice's), so every output shows each one as a visible code, `<U+202E>` (`format_codes`),
except where ordinary writing needs it (a joiner inside an emoji sequence or a word of a
script that joins its letters, a flag's tags). The engine's own texts mark code with
backticks; `markdown_text` and `html_text` show those spans as code, the rest as above.
HTML pages apply `shown_text` to every value (`page_finalize`) before jinja2's autoescape.
"""
from __future__ import annotations

import html
import os
import re
import unicodedata
from pathlib import Path

# C0 controls, DEL and C1 controls; plus the Unicode line and paragraph separators, which some
# terminals and Markdown renderers also break lines at.
_CONTROL = "\x00-\x1f\x7f-\x9f\u2028\u2029"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Unicode's format characters (category Cf, as of Unicode 15; a test compares this with the
# interpreter's `unicodedata`).
_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
           "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
           "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
           "\U000e0020-\U000e007f")
# A subdivision flag (England, Scotland, Wales): a black flag, then tag letters, then the
# cancel tag. Its tags are kept; tags anywhere else (text hidden from a reader) are not.
_FLAG = "\U0001f3f4[\U000e0020-\U000e007e]{1,32}\U000e007f"
_ZWNJ, _ZWJ = "\u200c", "\u200d"
# Scripts whose words use the joiners (ZWNJ, ZWJ) between letters: Arabic and Persian,
# Syriac, Thaana, N'Ko, the Indic scripts through Sinhala, Myanmar, Khmer, Mongolian,
# Arabic presentation forms.
_JOINING = re.compile("[\u0600-\u0dff\u1000-\u109f\u1780-\u18af\ua8e0-\ua8ff"
                      "\ufb50-\ufdff\ufe70-\ufefe]")
_VS16 = "\ufe0f"


def _is_emoji(ch: str) -> bool:
    """A pictograph or a modifier an emoji sequence joins (symbols, skin tones, VS16)."""
    return ch == _VS16 or unicodedata.category(ch) in ("So", "Sk")


def _ordinary_joiner(text: str, at: int) -> bool:
    """Whether the joiner at `at` is part of ordinary writing: between two letters (or
    marks) of a script that joins its letters, or, for ZWJ, inside an emoji sequence
    (👩‍💻, 🏳️‍🌈)."""
    if at == 0 or at + 1 >= len(text):
        return False
    before, after = text[at - 1], text[at + 1]
    if _JOINING.match(before) and _JOINING.match(after):
        return True
    return text[at] == _ZWJ and _is_emoji(before) and after != _VS16 and _is_emoji(after)


def _code(ch: str) -> str:
    return f"<U+{ord(ch):04X}>"


def _html_code(ch: str) -> str:
    return f"&lt;U+{ord(ch):04X}&gt;"


_FORMAT_RE = re.compile(f"(?P<flag>{_FLAG})|[{_FORMAT}]")
_ANY_FORMAT = re.compile(f"[{_FORMAT}]")


def _format(s: str, code=_code) -> str:
    # Most texts hold none: one scan for a single class is the cheap way to know.
    if s.isascii() or not _ANY_FORMAT.search(s):
        return s

    def sub(match: re.Match) -> str:
        ch = match.group()
        if match.group("flag") is not None or (
                ch in (_ZWNJ, _ZWJ) and _ordinary_joiner(match.string, match.start())):
            return ch
        return code(ch)
    return _FORMAT_RE.sub(sub, s)


def format_codes(text: object) -> str:
    """`text` with every Unicode format character shown as a code (`<U+202E>`), but those
    ordinary writing needs (see the module's note); everything else as it is."""
    return _format(str(text))


_CONTROL_RE = re.compile(f"[{_CONTROL}]")


def _escape_control(match: re.Match) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xff else f"\\u{code:04x}"


def visible(text: object) -> str:
    """`text` on one line with every control character shown as an escape (ESC -> \\x1b)
    and every format character as a code (RLO -> <U+202E>; `format_codes`)."""
    return _format(_CONTROL_RE.sub(_escape_control, str(text)))


# Line feed and tab are kept: a page shows an answer's lines.
_SHOWN_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(s: str, code=_code) -> str:
    return _format(_SHOWN_CONTROL_RE.sub(lambda m: code(m.group()), s), code)


def shown_text(text: object) -> str:
    """A student's text as a page shows it, line breaks and tabs kept: every other control
    character and every format character as a code (`<U+001B>`, `<U+202E>`)."""
    return _shown(str(text))


def page_finalize(value: object) -> object:
    """jinja2's `finalize` for every HTML page: each value a template prints is shown with
    `shown_text` (in HTML the engine built, such as `html_text`'s, the codes are escaped)."""
    if not isinstance(value, str):
        return value
    if hasattr(value, "__html__"):          # markupsafe's Markup: HTML already
        return type(value)(_shown(str(value), _html_code))
    return shown_text(value)


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
    """A CSV cell a spreadsheet shows as text: format characters as codes (`format_codes`),
    and a leading apostrophe on text that would start a formula. Numbers (written by the
    grader itself) stay numbers."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, (int, float)):
        return f"{value:g}"
    text = format_codes(value)
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
