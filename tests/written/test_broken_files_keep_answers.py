"""No written answer is lost to the code around it: a file whose code does not parse, one that
raises on import, one that is not UTF-8, and a notebook whose cells do not run all keep their
answers, read from the file's text. Each entry point says so: `check`, `grade` (grades.json
pending, the feedback files, the terminal), `autograder review`, Gradescope, Classroom 50,
GitHub Actions, and the notebook."""
from __future__ import annotations

import ast
import csv
import json

import nbformat
import pytest

from helpers import WRITTEN, WRITTEN_POINTS, cli_in_process, lent_sandbox, ROOT

from autograder.model.assignment import load_assignment
from autograder.platforms.notebook.build import build_notebook
from autograder.written import collect
from autograder.written.collect import from_source, tolerant_parse

ALICE = (ROOT / "assignments" / "attention" / "examples" / "alice.py").read_text()
IDS = WRITTEN
SCALE_WORDS = "Large scores saturate the softmax, so its gradients vanish."
NOTEBOOK_SCALE = "Scores grow with **d_k**; dividing keeps the softmax soft."


def _syntax_error() -> str:
    assert "def softmax(x, dim=-1):" in ALICE
    return ALICE.replace("def softmax(x, dim=-1):", "def softmax(x, dim=-1)")


def _raises_on_import() -> str:
    return ALICE.replace("import torch\n", "import torch\nraise RuntimeError('boom')\n", 1)


def _latin1() -> bytes:
    return (f'why_scale = "{SCALE_WORDS} (caf\xe9)"\n'
            "def softmax(x, dim=-1):\n    return x\n").encode("latin-1")


def _broken_notebook() -> str:
    """The student notebook with its Markdown answer to why_scale, a code cell with a syntax
    error, one that raises, and why_positions as a string in a cell that does not compile."""
    nb = build_notebook(load_assignment("attention"))
    for cell in nb.cells:
        if "why_scale" in cell.get("metadata", {}).get("tags", []):
            cell["source"] = NOTEBOOK_SCALE
    nb.cells += [nbformat.v4.new_code_cell("def softmax(x, dim=-1)\n    return x\n"),
                 nbformat.v4.new_code_cell("raise RuntimeError('cell fails')\n"),
                 nbformat.v4.new_code_cell('why_positions = "Attention sees a set."\n'
                                           "print(1 +)\n")]
    return nbformat.writes(nb)


# {file name: (content, the written questions it answers)}
BROKEN = {
    "syntax.py": (_syntax_error(), IDS),
    "raises.py": (_raises_on_import(), IDS),
    "latin.py": (_latin1(), ["why_scale"]),
    "cells.ipynb": (_broken_notebook(), ["why_scale", "why_positions"]),
}


def _write(folder, name):
    content, _ = BROKEN[name]
    path = folder / name
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


# ------------------------------------------------------------------ reading the text

def test_answers_are_read_past_statements_that_do_not_parse():
    found = from_source(_syntax_error(), IDS)
    assert sorted(found) == sorted(IDS)
    assert found == from_source(ALICE, IDS)        # as if the code were right
    assert from_source("why_scale = 'x'\ndef broken(:\n", IDS) == {"why_scale": "x"}
    # An unclosed bracket in a function, an answer whose lines start at column 0, an `else`
    # without its colon, and an answer whose own statement is broken (only that one is lost).
    source = ("def f(x):\n    return (x,\n\nwhy_scale = '''\nDot products grow\nwith d_k.\n'''\n"
              "if x:\n    pass\nelse\n    pass\nwhy_positions = \"it's \"quoted\" badly\"\n"
              "why_quadratic = 'T by T'\n")
    assert from_source(source, IDS) == {"why_scale": "\nDot products grow\nwith d_k.\n",
                                        "why_quadratic": "T by T"}


def test_a_file_of_broken_lines_costs_bounded_work(monkeypatch):
    """Each broken statement costs a parse of the source: at most MAX_LEFT_OUT of them, and at
    most PARSE_BUDGET characters beyond twice the source's length, however the file is made."""
    parsed = []
    real = ast.parse
    monkeypatch.setattr(collect.ast, "parse", lambda text, *a, **k: (parsed.append(len(text)),
                                                                     real(text, *a, **k))[1])
    for source in ("a b c\n" * 100_000 + "why_scale = 'x'\n",
                   "x = (\n" + "a b c\n" * 2_000 + "why_scale = 'x'\n",
                   "def f(:\n" * 5_000):
        parsed.clear()
        from_source(source, IDS)
        assert len(parsed) <= collect.MAX_LEFT_OUT + 1
        assert sum(parsed) <= collect.PARSE_BUDGET + 3 * len(source)
    assert tolerant_parse("a b c\n" * 100_000) is None


# ------------------------------------------------------------------ check

@pytest.mark.parametrize("name", list(BROKEN))
def test_check_shows_the_answers_of_a_broken_file(tmp_path, name):
    path = _write(tmp_path, name)
    r = cli_in_process("check", str(path), "-a", "attention")
    assert r.returncode == 1, r.stdout + r.stderr           # the code does not pass
    answered = BROKEN[name][1]
    for qid in IDS:
        mark = "[HAND]" if qid in answered else "[TODO]"
        assert f"{mark} {qid} (written, {WRITTEN_POINTS[qid]} points): " in r.stdout, r.stdout
    empty = [q for q in IDS if q not in answered]
    if empty:
        assert f"Written questions still unanswered: {', '.join(empty)} " in r.stdout
    else:
        assert "still unanswered" not in r.stdout


# ------------------------------------------------------------------ grade, feedback, review

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken-answers")
    cls = root / "class"
    cls.mkdir()
    for name in BROKEN:
        _write(cls, name)
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--feedback")
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    rows = {s["student"]: s for s in json.loads((out / "grades.json").read_text())
            ["submissions"]}
    return {"out": out, "stdout": r.stdout, "rows": rows}


def _student(name: str) -> str:
    return name.rsplit(".", 1)[0]


def test_grade_keeps_them_pending_in_grades_json_and_the_feedback(graded):
    waiting = sum(len(answered) for _, answered in BROKEN.values())
    assert f"{waiting} written answers of {len(BROKEN)} students wait for a grader" \
        in graded["stdout"]
    for name, (_, answered) in BROKEN.items():
        row = graded["rows"][_student(name)]
        assert row["written_pending"] == len(answered), name
        for qid in IDS:
            q = row["questions"][qid]
            assert q["status"] == ("pending" if qid in answered else "not attempted"), \
                (name, qid)
            assert (q["score"] is None) == (qid in answered)
        md = (graded["out"] / "feedback" / f"{_student(name)}.md").read_text()
        html = (graded["out"] / "feedback" / f"{_student(name)}.html").read_text()
        for qid in answered:
            assert f"## {qid} (written): pending/{WRITTEN_POINTS[qid]} (waiting for a grader)" \
                in md, name
            assert f"{qid} (written): pending/{WRITTEN_POINTS[qid]}" in html
        assert "Your answer:" in md
    assert graded["rows"]["cells"]["questions"]["why_scale"]["answer"] == NOTEBOOK_SCALE
    assert graded["rows"]["cells"]["questions"]["why_positions"]["answer"] == \
        "Attention sees a set."
    assert SCALE_WORDS in graded["rows"]["latin"]["questions"]["why_scale"]["answer"]
    # The terminal's feedback says the same.
    assert "[WAIT] why_scale: pending/3 (written: waiting for a grader)" in graded["stdout"]


def test_they_reach_the_review_queue(graded, tmp_path):
    sheet = tmp_path / "queue.csv"
    r = cli_in_process("review", "-a", "attention", str(graded["out"]), "--export", str(sheet))
    assert r.returncode == 0, r.stderr
    queue = {(row["student"], row["question"]): row
             for row in csv.DictReader(sheet.open(encoding="utf-8"))}
    for name, (_, answered) in BROKEN.items():
        for qid in answered:
            row = queue[(_student(name), qid)]
            assert row["status"] == "pending" and row["answer"].strip(), (name, qid)


def test_gradescope_lists_them_as_answered(graded):
    from autograder.platforms.gradescope.run import to_gradescope

    for name, (_, answered) in BROKEN.items():
        output = to_gradescope(graded["rows"][_student(name)])["output"]
        for qid in IDS:
            said = "answered (" if qid in answered else "not answered yet"
            assert f"- {qid} ({WRITTEN_POINTS[qid]} points): {said}" in output, (name, output)


# ------------------------------------------------------------------ Classroom 50 and Actions

@pytest.mark.parametrize("name", ["syntax.py", "cells.ipynb"])
def test_classroom50_and_actions_say_they_are_answered(tmp_path, capsys, name):
    """The checkout's file graded as Classroom 50 and the Actions step grade it: the Release,
    the step summary's notes and the log list the answers as answered."""
    from autograder.platforms.actions.run import log_feedback
    from autograder.platforms.checkout import grade_or_why_not
    from autograder.platforms.classroom50.run import release_body, result_document

    checkout = tmp_path / "repo"
    checkout.mkdir()
    path = _write(checkout, name)
    path.rename(checkout / ("attention" + path.suffix))
    assignment = load_assignment("attention")
    with lent_sandbox():
        result, why_not = grade_or_why_not(assignment, checkout)
    assert result is not None, why_not
    ident = {"schema": "classroom50/result/v1", "owner": "o", "assignment_type": "individual"}
    body = release_body(result, result_document(result, ident), assignment.title)
    for qid in BROKEN[name][1]:
        assert f"{qid.replace('_', chr(92) + '_')} ({WRITTEN_POINTS[qid]} points): answered (" \
            in body, body
        assert any(n.startswith(f"- {qid} ({WRITTEN_POINTS[qid]} points): answered (")
                   for n in result.notes), result.notes
    capsys.readouterr()
    log_feedback(result, assignment.title)
    log = capsys.readouterr().out
    for qid in BROKEN[name][1]:
        assert f"- {qid} ({WRITTEN_POINTS[qid]} points): answered (" in log
