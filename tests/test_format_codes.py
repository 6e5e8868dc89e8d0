"""`safetext`'s one rule for format characters, used by every output: each Unicode format
character (category Cf) shows as a code, `<U+202E>`, but those ordinary writing needs (a joiner
inside an emoji sequence or a word of a script that joins its letters, a flag's tags). Where
each output uses it: tests/course/test_format_characters.py and the platforms' tests."""
from __future__ import annotations

import sys
import unicodedata

import pytest

from autograder.model.safetext import (csv_cell, format_codes, markdown_inline, page_finalize,
                                 shown_text, visible)

HONEST = [
    "Zoë Ångström", "李小龙 你好", "Ахмед", "محمد علی", "עברית ועוד", "नमस्ते",
    "می\u200cخواهم",                      # Persian: a non-joiner inside a word
    "क्\u200dष",                          # Devanagari: a joiner for the half form
    "👩\u200d💻", "🏳\ufe0f\u200d🌈", "👨🏽\u200d⚕\ufe0f", "🧑\u200d🤝\u200d🧑",
    "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",   # Scotland's flag
    "e\u0301 (a combining accent)", "a\u00a0b (no-break space)",
]


@pytest.mark.parametrize("text", HONEST)
def test_honest_writing_shows_as_written(text):
    for shown in (format_codes(text), visible(text), shown_text(text), csv_cell(text)):
        assert shown == text
    assert markdown_inline(text) == text.replace("_", "\\_")


def test_every_format_character_shows_as_a_code():
    """All of category Cf as this interpreter's Unicode data has it, alone and between Latin
    letters (where no joiner belongs)."""
    cf = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert len(cf) > 150
    for ch in cf:
        code = f"<U+{ord(ch):04X}>"
        for text in (ch, f"a{ch}b"):
            expected = text.replace(ch, code)
            assert format_codes(text) == visible(text) == shown_text(text) == expected
            assert csv_cell(text) == expected


@pytest.mark.parametrize("text, shown", [
    ("attention-\u202eecila", "attention-<U+202E>ecila"),
    ("al\u200dice", "al<U+200D>ice"),                     # a joiner between Latin letters
    ("\u200d💻", "<U+200D>💻"),                            # a joiner with nothing before it
    ("👩\u200d", "👩<U+200D>"),
    ("محمد\u200d", "محمد<U+200D>"),
    ("hidden\U000e0041\U000e0042", "hidden<U+E0041><U+E0042>"),   # tags outside a flag
    ("🏴\U000e0041", "🏴<U+E0041>"),                        # no cancel tag: not a flag
    ("\ufeffbom", "<U+FEFF>bom"),
    ("\u202e=HYPERLINK()", "<U+202E>=HYPERLINK()"),
])
def test_spoofs_show_as_codes(text, shown):
    assert format_codes(text) == visible(text) == shown_text(text) == shown


def test_each_output_keeps_its_own_rules_for_controls():
    text = "a\x1b[2J\u202eb\nc\td"
    assert visible(text) == "a\\x1b[2J<U+202E>b\\nc\\td"           # one line
    assert shown_text(text) == "a<U+001B>[2J<U+202E>b\nc\td"       # lines kept
    assert format_codes(text) == "a\x1b[2J<U+202E>b\nc\td"          # CSV: cells may hold lines
    assert csv_cell("\u202e=1") == "<U+202E>=1"                    # no formula either way
    assert markdown_inline("x\u202ey") == "x&lt;U+202E&gt;y"


def test_every_value_a_page_prints_is_shown():
    from markupsafe import Markup

    from autograder.course.pages import page_environment

    env = page_environment()
    assert env.from_string("{{ x }}").render(x="<b>\u202e</b>") == \
        "&lt;b&gt;&lt;U+202E&gt;&lt;/b&gt;"
    assert env.from_string("{{ x|code }}").render(x="`a\u2066` b\u2069") == \
        "<code>a&lt;U+2066&gt;</code> b&lt;U+2069&gt;"
    assert page_finalize(Markup("<i>\u202e</i>")) == Markup("<i>&lt;U+202E&gt;</i>")
    assert page_finalize(3) == 3
