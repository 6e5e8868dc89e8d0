"""docs/naming-mistakes.md's figures are what its commands print: the NumPy corpus's command
block states, as `<!-- output: -->` markers, the lines its output must hold (the documentation
test runs it), and the page's table must give those same figures; so do the tokens corpus's
block in docs/writing-an-assignment.md, the table's row and docs/tokens.md."""
from __future__ import annotations

import re

from helpers import ROOT

PAGE = ROOT / "docs" / "naming-mistakes.md"
GUIDE = ROOT / "docs" / "writing-an-assignment.md"
TOKENS = ROOT / "docs" / "tokens.md"


def _figures(text: str, command: str) -> tuple[str, str, str, str]:
    """(named, files, carried, failing) from the output markers above `command`'s block."""
    block = text.index(command)
    markers = re.findall(r"<!-- output: (.*?) -->", text[max(0, block - 400):block])
    right = next(m for m in markers if m.startswith("feedback names the right mistake: "))
    cases = next(m for m in markers if m.startswith("failing cases of wrong submissions "))
    return (*re.search(r"(\d+)/(\d+)$", right).groups(),
            *re.search(r"(\d+)/(\d+)$", cases).groups())


def test_the_tokens_figures_are_the_ones_its_command_must_print():
    named, files, carried, failing = _figures(
        GUIDE.read_text(), "autograder diagnose-eval -a tokens --corpus tests/submissions/tokens")
    row = next(line for line in PAGE.read_text().splitlines()
               if line.startswith("| tokens `tokens/wrong/`"))
    assert f"({files} files" in row, row
    assert f"| {named}/{files} right, 0 wrong; {carried} of {failing} failing cases" in row, row
    prose = " ".join(TOKENS.read_text().split())
    assert f"names the right mistake for {named} of {files} wrong files" in prose
    assert f"({carried} of {failing})" in prose and f"{files} planted mistakes" in prose


def test_the_numpy_rows_figures_are_the_ones_its_command_must_print():
    text = PAGE.read_text()
    block = text.index("autograder diagnose-eval -a attention_numpy --corpus tests/submissions/numpy")
    markers = re.findall(r"<!-- output: (.*?) -->", text[max(0, block - 400):block])
    right = next(m for m in markers if m.startswith("feedback names the right mistake: "))
    cases = next(m for m in markers if m.startswith("failing cases of wrong submissions "))
    named, files = re.search(r"(\d+)/(\d+)$", right).groups()
    carried, failing = re.search(r"(\d+)/(\d+)$", cases).groups()
    row = next(line for line in text.splitlines() if line.startswith("| NumPy `numpy/wrong/`"))
    assert f"({files} files" in row, row
    assert f"| {named}/{files} right, 0 wrong; {carried} of {failing} failing cases" in row, row
