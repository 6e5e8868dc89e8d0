"""Terminal output cannot be forged: control characters in student names and in messages from
the student's process are shown as escapes, so a name with a newline adds no row to the summary
table, and an exception message cannot clear the screen or print a fake result line."""
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, WRITTEN_MAX, cases_of, max_points,
                     run_cli)
from hostile_names import TERMINAL_FORGER as FORGER
from hostile_names import TERMINAL_RAISE as RAISE
from hostile_names import TERMINAL_SHOWN as SHOWN
from hostile_names import forger_scores, forger_source, forger_status

from autograder.feedback.totals import Totals

# The message's leading line break is dropped (an error's first line is its first non-blank
# one); `\r` and the escape sequences stay in the line, shown escaped.
MESSAGE = ("softmax raised ValueError: [PASS] softmax: 6/6 (passed)\\x1b[2J\\rok\\x9b2K "
           "(line {line} of attention.py, in softmax: "
           "`raise ValueError(\"\\n[PASS] softmax: 6/6 (passed)\\x1b[2J\\rok\\x9b2K\")`)")


def _forger_source() -> str:
    return forger_source(RAISE)


@pytest.fixture(scope="module")
def hostile_class(hostile_names) -> Path:
    return hostile_names["class"]


def _no_controls(text: str) -> None:
    bad = [ch for ch in text if (ord(ch) < 32 and ch != "\n") or 0x7f <= ord(ch) <= 0x9f]
    assert not bad, bad


def test_summary_and_feedback_escape_names_and_messages(hostile_names):
    hostile_class = hostile_names["class"]
    stdout = hostile_names["stdout"]       # `grade --out --feedback --jobs 2`, run once
    _no_controls(stdout)
    lines = stdout.splitlines()
    assert lines[0].split() == ["submission", *QUESTIONS, "written", "total"]
    assert set(lines[1]) == {"-"}
    # Exactly one row per student: the newline in a name is not a row of its own.
    # (the table's legend lines, such as "wait: ...", follow the rows)
    rows = [row for row in lines[2:lines.index("", 2)]
            if not row.startswith(("wait: ", "adjusted: ", "*: "))]
    assert len(rows) == hostile_names["students"]
    assert all(len(row) == len(lines[0]) for row in rows), rows    # columns stay aligned
    by_name = {row.split()[0]: row.split()[1:] for row in rows}
    full = [f"{max_points(q):g}/{max_points(q):g}" for q in QUESTIONS]
    written = f"0/{WRITTEN_MAX}"          # no file of this class answers them
    assert by_name[SHOWN] == [*full, written, f"{AUTOGRADED_MAX}/{MAX_SCORE}"]
    scores = forger_scores()
    cells = [cell for score, most in scores.values()
             for cell in (["err"] if forger_status(score, most) == "error" else [])
             + [f"{score:g}/{most:g}"]]
    score, most = sum(s for s, _ in scores.values()), sum(m for _, m in scores.values())
    total = f"{score:g}/{most + WRITTEN_MAX:g}"
    assert by_name[FORGER] == [*cells, written, total]
    assert by_name["honest"] == [*full, written, f"{AUTOGRADED_MAX}/{MAX_SCORE}"]
    assert not any(row.startswith("mallory") for row in rows)
    line = _forger_source().splitlines().index(f"    {RAISE}") + 1
    forger = lines.index(f"{hostile_class}/{FORGER}/attention.py: "
                         f"{Totals(score, most, 0, WRITTEN_MAX).text(sep='/')}")
    assert lines[forger + 1:forger + 4] == [
        f"  [ERR ] softmax: 0/{max_points('softmax'):g} (error)",
        "         case   'lesson: softmax([1, 2, 3])': " + MESSAGE.format(line=line),
        f"               (and {len(cases_of('softmax')) - 1} more case(s) with the same problem)"]
    assert f"{hostile_class}/{SHOWN}/attention.py: " \
        f"{Totals(AUTOGRADED_MAX, AUTOGRADED_MAX, 0, WRITTEN_MAX).text(sep='/')}" in lines
    assert not any(x.startswith("[PASS]") for x in lines)   # the forged line is not a line


def test_check_escapes_the_students_own_messages(hostile_class: Path):
    path = hostile_class / FORGER / "attention.py"
    r = run_cli("check", str(path), "-a", "attention")
    assert r.returncode == 1, r.stderr[-3000:]
    _no_controls(r.stdout)
    line = _forger_source().splitlines().index(f"    {RAISE}") + 1
    lines = r.stdout.splitlines()
    public = [c for c in cases_of("softmax") if not c.hidden]
    i = lines.index(f"  [ERR ] softmax: 0/{sum(c.points for c in public):g} (error)")
    assert lines[i + 1:i + 3] == [
        "         case   'lesson: softmax([1, 2, 3])': " + MESSAGE.format(line=line),
        f"               (and {len(public) - 1} more case(s) with the same problem)"]
    honest = run_cli("check", str(hostile_class / "honest" / "attention.py"), "-a", "attention")
    assert honest.returncode == 0 and "All public checks pass." in honest.stdout
