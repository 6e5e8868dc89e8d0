"""The static scan's cost is bounded: honest files are scanned in full, in work linear in their
size (counted by the scan's own budget, not timed: the time is `autograder benchmark`'s); a
source too large or too deep for the budget is not skipped silently (padding would then hide
tampering) but reported as cut short, and its row is flagged for review with its points kept."""
import ast
import json

import pytest

from helpers import QUESTIONS, SUBMISSIONS

from autograder.static_scan import CUT_SHORT_MESSAGE, scan_source
from autograder.static_scan import budget

API = list(QUESTIONS)
HONEST = sorted((SUBMISSIONS / "correct").glob("*.py")) + \
    sorted((SUBMISSIONS / "wrong").glob("*.py"))
TAMPER = "import sys\nsys.modules['autograder'] = None\n"


def filled(unit, size: int) -> str:
    """`unit(i)` repeated up to `size` characters."""
    parts, n, i = [], 0, 0
    while n < size:
        parts.append(unit(i))
        n += len(parts[-1])
        i += 1
    return "".join(parts)


def scan_counted(source, monkeypatch):
    """scan_source's result and the work it did, counted by its own budget (syntax nodes and
    units of work), not by a clock: the same on a loaded machine as on an idle one."""
    import autograder.static_scan as static_scan

    made = []

    class Counted(budget.Budget):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(static_scan, "Budget", Counted)
    result = scan_source(source, API)
    assert len(made) == 1, "one budget for the whole scan"
    return result, made[0]


UNDER_SIZE = budget.MAX_SOURCE_CHARS - 4096
HOSTILE = {
    "flat assignments": lambda: filled(lambda i: f"x{i} = x{max(i - 1, 0)} + 1\n", UNDER_SIZE),
    "one huge function": lambda: "import torch\ndef softmax(x):\n" + filled(
        lambda i: f"    v{i} = torch.exp(x) + v{max(i - 1, 0)}.sum()\n", UNDER_SIZE),
    "many tiny functions": lambda: "import torch\n" + filled(
        lambda i: f"def f{i}(x):\n    return f{i + 1}(x) + torch.exp(x)\n", UNDER_SIZE),
    "long attribute chain": lambda: "import torch\nx = torch" + ".a" * (UNDER_SIZE // 2) + "\n",
    "deeply nested expression": lambda: "x = " + "+".join(["a"] * (UNDER_SIZE // 2)) + "\n",
    "nested functions": lambda: "".join(    # ~32 KiB of nesting, then flat statements
        "    " * d + f"def f{d}(x):\n" + "    " * (d + 1) + "global g\n" for d in range(90))
        + "    " * 90 + "return x\n"
        + filled(lambda i: f"y{i} = [{i}, {i}, {i}]\n", UNDER_SIZE - 40_000),
    "2 MiB of padding": lambda: TAMPER + filled(lambda i: f"pad{i} = {i}\n", 2 * 1024 * 1024),
}


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.name)
def test_honest_files_are_scanned_in_full_in_linear_work(path, monkeypatch):
    result, work = scan_counted(path.read_text(), monkeypatch)
    assert result.cut_short is None and result.error is None
    # A few thousand nodes, far under the budget, each costing a bounded number of steps (about
    # two today): work that grows faster than the file would show here first.
    assert 0 < work.nodes < budget.MAX_NODES // 20, work.nodes
    assert work.steps <= 3 * work.nodes, (work.steps, work.nodes)


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_source_is_cut_short_within_a_bounded_amount_of_work(kind, monkeypatch):
    source = HOSTILE[kind]()
    result, work = scan_counted(source, monkeypatch)
    assert result.cut_short, kind
    # Stopped by a limit that counts (size, nesting, syntax nodes), before the CPU-time
    # backstop, and within the node budget's worth of steps.
    assert "CPU" not in result.cut_short, (kind, result.cut_short)
    assert work.nodes <= budget.MAX_NODES + 1 and work.steps <= 2 * budget.MAX_NODES, \
        (kind, work.nodes, work.steps)
    # Cut short means nothing was checked: no findings are made up either way.
    assert result.tamper == [] and result.forbidden("softmax", ["torch.exp"]) == []


def test_padding_cannot_hide_tampering_it_gets_the_flag():
    small = scan_source(TAMPER, API)
    assert small.tamper and small.cut_short is None          # found when the file is small
    padded = scan_source(TAMPER + "# padding\n" * (budget.MAX_SOURCE_CHARS // 10 + 1), API)
    assert padded.cut_short and "KiB" in padded.cut_short   # flagged when padded


def test_the_node_budget_is_counted_over_all_cells_of_a_notebook():
    cell = filled(lambda i: f"a{i} = b{i}\n", 20_000)      # far under 1 MiB
    nodes = sum(1 for _ in ast.walk(ast.parse(cell)))
    cells = [cell] * (budget.MAX_NODES // nodes + 1)
    assert scan_source(cell, API).cut_short is None
    result = scan_source(cells, API)
    assert result.cut_short and "syntax nodes" in result.cut_short


def test_code_run_by_exec_counts_against_the_same_budget():
    snippet = filled(lambda i: f"a{i} = {i}\n", 60_000)
    assert scan_source(f"exec({snippet!r})\n", API).cut_short is None
    source = "".join(f"exec({snippet!r})\n" for _ in range(8))
    assert len(source) < budget.MAX_SOURCE_CHARS
    result = scan_source(source, API)
    assert result.cut_short and "syntax nodes" in result.cut_short


def test_code_run_by_exec_too_long_to_scan_is_not_skipped_silently():
    hidden = TAMPER + "# padding\n" * 12_000
    result = scan_source(f"exec({hidden!r})\n", API)
    assert result.cut_short and "exec" in result.cut_short


def test_the_cpu_budget_stops_a_slow_scan(monkeypatch):
    path = SUBMISSIONS / "correct" / "reference_style.py"
    monkeypatch.setattr(budget, "MAX_CPU_SECONDS", 0.0)
    result = scan_source(path.read_text(), API)
    assert result.cut_short and "CPU" in result.cut_short


def test_global_declarations_are_still_seen_in_nested_functions():
    """The one-pass `global` search keeps the old meaning: a `global` anywhere in a function's
    body (nested scopes included) makes its name global there."""
    source = ("import torch\n"
              "def softmax(x):\n"
              "    def inner():\n"
              "        global f\n"
              "        f = torch.softmax\n"
              "    inner()\n"
              "    return f(x, -1)\n")
    found = scan_source(source, API).forbidden("softmax", ["torch.softmax"])
    assert ("f", 7) in [(f.code, f.line) for f in found]    # the call through the global


# ------------------------------------------------------------------ the row, graded

def test_a_padded_file_keeps_its_points_and_is_flagged_for_review(grade, tmp_path):
    honest = (SUBMISSIONS / "correct" / "reference_style.py").read_text()
    plain = grade(SUBMISSIONS / "correct" / "reference_style.py")
    assert not plain.integrity and not any(n.startswith(CUT_SHORT_MESSAGE) for n in plain.notes)
    padded = tmp_path / "reference_style.py"
    padded.write_text(honest + "\n" + "# padding\n" * (budget.MAX_SOURCE_CHARS // 10 + 1))
    result = grade(padded)
    assert result.score == plain.score                      # under on_tamper = "zero" too
    assert result.notes[0].startswith(CUT_SHORT_MESSAGE)
    row = json.loads(json.dumps(result.to_json()))
    assert row["integrity"][0]["rule"] == "scan-cut-short"
    assert row["integrity_review"]["questions"] == []
    assert row["integrity_review"]["score_without_penalty"] == plain.score
