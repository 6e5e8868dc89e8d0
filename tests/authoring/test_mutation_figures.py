"""docs/mutation-analysis.md's figures are what `autograder mutants` prints: its table has a
row for every shipped assignment (every folder of `assignments/` with a reference), each row's
figures are the command's on that assignment, and the summary the page quotes is the command's
summary, its time aside. Running the command takes a minute or two per assignment: `slow`."""
from __future__ import annotations

import json
import re

import pytest

from helpers import ROOT, cli_in_process

from autograder.model.assignment import load_assignment

PAGE = ROOT / "docs" / "mutation-analysis.md"
COLUMNS = ("mutants", "caught_by_public", "caught_only_by_hidden", "not_caught", "equivalent",
           "stopped")


def shipped() -> list[str]:
    names = []
    for folder in sorted((ROOT / "assignments").iterdir()):
        if (folder / "assignment.toml").is_file():
            ref = load_assignment(folder).reference_path
            if ref is not None and ref.is_file():
                names.append(folder.name)
    return names


def table_rows() -> dict[str, list[str]]:
    rows = {}
    for line in PAGE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == len(COLUMNS) + 2 and cells[1].isdigit():
            rows[cells[0]] = cells[1:]
    return rows


def quoted_summaries() -> dict[str, list[str]]:
    """{assignment: lines} of each summary the page quotes in a text block."""
    found = {}
    for block in re.findall(r"```text\n(.*?)\n```", PAGE.read_text(), re.S):
        m = re.match(r"assignments/(\w+): \d+ mutants of ", block)
        if m:
            found[m.group(1)] = block.splitlines()
    return found


def without_time(lines: list[str]) -> list[str]:
    return [re.sub(r" in \d+ s \(\d+ jobs\)$", "", line) for line in lines]


def test_the_table_has_a_row_for_every_shipped_assignment():
    assert sorted(table_rows()) == shipped()
    assert set(quoted_summaries()) <= set(shipped()) and quoted_summaries()


@pytest.mark.slow
@pytest.mark.parametrize("name", shipped())
def test_the_figures_are_what_the_command_prints(name, tmp_path):
    out = tmp_path / "mutants.json"
    r = cli_in_process("mutants", "-a", name, "--json", str(out))
    figures = json.loads(out.read_text())["figures"]
    assert r.returncode == (1 if figures["not_caught"] else 0), r.stderr[-2000:]
    row = table_rows()[name]
    assert row == [str(figures[c]) for c in COLUMNS] + \
        [f"{figures['named']} of {figures['caught']} caught"], (row, figures)
    quoted = quoted_summaries().get(name)
    if quoted is not None:
        printed = r.stdout.splitlines()[:len(quoted)]
        assert without_time(printed) == without_time(quoted), printed
