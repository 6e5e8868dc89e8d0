"""The static scan's cost is bounded on any input, counted in work (syntax nodes, steps of
analysis, characters built by constant folding), never by a clock: honest files are scanned in
full; a source too large or too deep for the budget is not skipped silently (padding would then
hide tampering) but reported as cut short, and its row is graded on run-time evidence and
flagged for review with its points kept, in every output the instructor reads."""
import ast
import csv
import json

import pytest

from helpers import AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, SUBMISSIONS

from autograder.feedback.terminal import submission_text, summary_table
from autograder.course.report import write_reports
from autograder.static_scan import CUT_SHORT_MESSAGE, scan_source
from autograder.static_scan import budget, folding
from autograder.feedback.contract import submission_json

API = list(QUESTIONS)
HONEST = sorted((SUBMISSIONS / "correct").glob("*.py")) + \
    sorted((SUBMISSIONS / "wrong").glob("*.py"))
TAMPER = "import sys\nsys.modules['autograder.sandbox.worker'].run_call = print\n"
HOSTILE_DIR = SUBMISSIONS / "hostile"
# Honest files take at most 4 steps per syntax node (a main-guarded demo block, left out, is still walked once); every step is bounded work.
STEPS_PER_NODE = 4


def filled(unit, size: int) -> str:
    """`unit(i)` repeated up to `size` characters."""
    parts, n, i = [], 0, 0
    while n < size:
        parts.append(unit(i))
        n += len(parts[-1])
        i += 1
    return "".join(parts)


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
def test_honest_files_are_scanned_in_full_with_little_work(path):
    result = scan_source(path.read_text(), API)
    assert result.cut_short is None and result.error is None
    work = result.work
    assert work["nodes"] < 5_000 and work["steps"] <= STEPS_PER_NODE * work["nodes"]
    assert work["folded_chars"] < 1_000


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_source_is_scanned_within_the_counted_budget(kind):
    source = HOSTILE[kind]()
    result = scan_source(source, API)
    work = result.work
    assert work["nodes"] <= budget.MAX_NODES + 1, kind
    assert work["steps"] <= budget.MAX_STEPS + budget.CHECK_EVERY, kind
    assert work["folded_chars"] <= budget.MAX_FOLDED_TOTAL, kind
    if result.cut_short:
        # Cut short means nothing was checked: no findings are made up either way.
        assert result.tamper == [] and result.review == []
        assert result.forbidden("softmax", ["torch.exp"]) == []
    else:                       # scanned in full: it was within every limit
        assert work["steps"] <= STEPS_PER_NODE * work["nodes"], kind


def test_a_source_over_the_size_limit_is_cut_short_before_parsing():
    result = scan_source(HOSTILE["2 MiB of padding"](), API)
    assert "KiB" in result.cut_short and result.work["nodes"] == result.work["steps"] == 0


# ------------------------------------------------------------------ constant folding

DOS = HOSTILE_DIR / "scan_dos_constant_formatting.py"
# The denial of service, live (not in dead code): each line would fold 200 MB.
LIVE_FORMATTING = "".join(f"w{i} = str(str('%0200000000d' % {i})[0:1])[0:1]\n"
                          for i in range(300))
# Expressions that would build huge strings if folded naively; each is used as a key
# (`d[...]`), which the scan folds to resolve it.
BLOW_UPS = {
    "a huge width": "'%0200000000d' % 7",
    "a huge precision": "'%.200000000f' % 7",
    "a star width": "'%*d' % 7",
    "a format spec in an f-string": "f'{7:0200000000d}'",
    "a replace that multiplies": "('a' * 64).replace('a', 'b' * 9000)",
    "a join of long parts": "'-'.join(['" + "b" * 6000 + "', '" + "c" * 6000 + "'])",
    "a repeat": "'ab' * 10**9",
    "a long concatenation chain": " + ".join(["'" + "z" * 3000 + "'"] * 25),
    "nested concatenations": "(" * 20 + "'y' * 64" + " + 'y' * 64)" * 20,
}


def test_the_dos_file_in_dead_code_costs_almost_nothing():
    source = DOS.read_text()
    assert 15_000 < len(source) < 25_000 and source.count("'%0200000000d' %") == 300
    result = scan_source(source, API)
    assert result.cut_short is None and result.tamper == [] and result.review == []
    assert result.work["folded_chars"] == 0          # dead code is never even folded
    assert result.work["steps"] < 5_000


def test_the_same_formatting_outside_dead_code_is_never_folded():
    result = scan_source(LIVE_FORMATTING, API)
    assert result.cut_short is None
    # Each of the 300 formattings is refused from its format string: nothing is built.
    assert result.work["folded_chars"] == 0
    assert result.work["steps"] <= STEPS_PER_NODE * result.work["nodes"]


@pytest.mark.parametrize("kind", sorted(BLOW_UPS))
def test_no_folded_value_is_longer_than_the_cap(kind):
    result = scan_source(f"x = d[{BLOW_UPS[kind]}]\n", API)
    assert result.cut_short is None
    # Partial results up to the cap may be built on the way, never more (each node once).
    assert result.work["folded_chars"] <= 2 * folding.MAX_FOLDED_CHARS, result.work


def test_folding_still_resolves_the_names_students_build():
    from autograder.static_scan.folding import Folder

    fold = Folder(budget.Budget())
    trees = []      # kept alive: a scan folds the nodes of one live tree
    for expr, want in [("'soft' + 'max'", "softmax"), ("'%s%s' % ('so', 'ftmax')", None),
                       ("'%smax' % 'soft'", "softmax"), ("f\"{'soft'}max\"", "softmax"),
                       ("''.join(['so', 'ft', 'max'])", "softmax"),
                       ("'xamtfos'[::-1]", "softmax"), ("'SOFTMAX'.lower()", "softmax"),
                       ("str('%05d' % 7)[0:1]", "0"), ("chr(115) + 'oftmax'", "softmax"),
                       ("f'{7:5d}'", None), ("f'{7!r}'", None)]:     # not folded: unknown
        trees.append(ast.parse(expr, mode="eval"))
        assert fold(trees[-1].body) == want, expr


def test_the_total_of_folded_characters_is_capped():
    # Each value under the cap (12,352 characters built from 25 of source), but together
    # over the whole scan's allowance.
    line = "x = d['q' * 64 * 64 * 2]\n"
    source = line * (budget.MAX_FOLDED_TOTAL // 12_352 + 10)
    assert len(source) < budget.MAX_SOURCE_CHARS
    result = scan_source(source, API)
    assert result.cut_short and "characters of constant strings" in result.cut_short
    assert result.work["folded_chars"] <= budget.MAX_FOLDED_TOTAL + folding.MAX_FOLDED_CHARS


def test_padding_cannot_hide_tampering_it_gets_the_flag():
    small = scan_source(TAMPER, API)
    assert small.tamper and small.cut_short is None          # found when the file is small
    padded = scan_source(TAMPER + "# padding\n" * (budget.MAX_SOURCE_CHARS // 10 + 1), API)
    assert padded.cut_short and "KiB" in padded.cut_short   # flagged when padded
    assert padded.tamper == []                              # but not proven


def test_the_node_budget_is_counted_over_all_cells_of_a_notebook():
    cell = filled(lambda i: f"a{i} = b{i}\n", 20_000)      # far under 1 MiB
    nodes = sum(1 for _ in ast.walk(ast.parse(cell)))
    cells = [cell] * (budget.MAX_NODES // nodes + 1)
    assert scan_source(cell, API).cut_short is None
    result = scan_source(cells, API)
    assert result.cut_short and "syntax nodes" in result.cut_short


def test_code_run_by_exec_counts_against_the_same_budget():
    snippet = filled(lambda i: "a = " + "b, " * 20 + "\n", 40_000)     # ~28,000 nodes
    assert scan_source(f"exec({snippet!r})\n", API).cut_short is None
    source = "".join(f"exec({snippet!r})\n" for _ in range(4))
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


def test_the_clock_is_read_every_few_steps(monkeypatch):
    """Between two looks at the clock there are at most CHECK_EVERY bounded steps."""
    reads = []
    real = budget.Budget.check_time
    monkeypatch.setattr(budget.Budget, "check_time",
                        lambda self: (reads.append(self.steps), real(self))[1])
    result = scan_source(HOSTILE["flat assignments"](), API)
    assert result.cut_short and len(reads) > 1000
    gaps = [b - a for a, b in zip(reads, reads[1:])]
    assert max(gaps) <= budget.CHECK_EVERY <= 64


def test_the_steps_of_analysis_are_capped(monkeypatch):
    monkeypatch.setattr(budget, "MAX_STEPS", 500)
    result = scan_source((SUBMISSIONS / "correct" / "reference_style.py").read_text(), API)
    assert result.cut_short and "steps of analysis" in result.cut_short
    assert result.work["steps"] <= 500 + budget.CHECK_EVERY


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
    row = json.loads(json.dumps(submission_json(result)))
    assert row["integrity"][0]["rule"] == "scan-cut-short"
    assert row["integrity_review"]["questions"] == []
    assert row["integrity_review"]["score_without_penalty"] == plain.score


PADDED_PATCH = HOSTILE_DIR / "scan_budget_padded_engine_patch.py"


def test_an_engine_patch_padded_past_the_node_budget_is_never_a_plain_pass(grade, assignment,
                                                                          tmp_path):
    """The issue's case: the scan is cut short at 100,000 nodes, so it proves nothing; the row
    is graded on run-time evidence and flagged in the terminal table, the per-student text,
    the feedback file, grades.csv, grades.json and the report's review list."""
    result = grade(PADDED_PATCH)
    softmax = result.questions["softmax"].status
    # The run-time check decides softmax: the patch cannot switch the dispatcher's refusal off.
    assert softmax == "forbidden call"
    assert result.score == AUTOGRADED_MAX - result.questions["softmax"].max_score
    assert all(q.status == "passed" for qid, q in result.questions.items() if qid != "softmax")
    assert result.notes[0].startswith(CUT_SHORT_MESSAGE)
    assert "100,000 syntax nodes" in result.notes[0]
    row = submission_json(result)
    assert [(f["kind"], f["rule"]) for f in row["integrity"]] == [("review", "scan-cut-short")]
    assert row["integrity_review"] == {
        "on_tamper": "zero", "evidence": "review", "questions": [],
        "score_without_penalty": result.score,
        "scan_cut_short": "more than 100,000 syntax nodes"}
    result.student = "pat"
    assert summary_table([result], API).splitlines()[-1].endswith("FLAG")
    assert "[FLAG: flagged for review]" in submission_text(result).splitlines()[0]
    files = write_reports(tmp_path, assignment, [result])
    assert CUT_SHORT_MESSAGE in (tmp_path / "feedback" / "pat.md").read_text()
    [csv_row] = csv.DictReader(files["csv"].open())
    # The row's status shows the hard evidence first; the flag is in the review list below.
    assert csv_row["status"] == "forbidden call" and csv_row["total"] == f"{result.score:g}"
    data = json.loads(files["json"].read_text())
    assert data["submissions"][0]["integrity_review"]["scan_cut_short"]
    html = files["html"].read_text()
    review_list = html[html.index("flagged for review or met a grader error"):
                       html.index("<h2>Students</h2>")]
    assert "pat" in review_list and CUT_SHORT_MESSAGE in review_list


def test_the_dos_file_is_graded_in_full_with_no_flag(grade):
    result = grade(DOS)
    assert result.score == AUTOGRADED_MAX and result.max_score == MAX_SCORE
    assert not result.integrity and "integrity" not in submission_json(result)
    last = summary_table([result], API).splitlines()[-1].rstrip()
    assert last.endswith(f"{AUTOGRADED_MAX}/{MAX_SCORE}")
