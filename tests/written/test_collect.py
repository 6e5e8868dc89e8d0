"""Written answers taken from a submission: text only, capped, from the notebook's tagged
Markdown cells, the module's strings (as the worker reports them) or the source read without
running it."""
from __future__ import annotations

import json

import nbformat
import pytest

from helpers import PUBLIC_MAX

from autograder.model.assignment import load_assignment
from autograder.platforms.notebook.build import build_notebook
from autograder.intake.submissions import read_notebook
from autograder.model.written_answer import Status
from autograder.written.collect import MAX_CHARS, answers, from_markdown, from_source

QUESTIONS = load_assignment("attention").written
IDS = [q.id for q in QUESTIONS]


def test_both_tracks_ask_three_or_four_explain_why_questions():
    for name in ("attention", "attention_numpy"):
        written = load_assignment(name).written
        assert 3 <= len(written) <= 4
        assert all(q.prompt and q.points > 0 and q.rubric and q.model_answer for q in written)
    assert IDS == ["why_scale", "why_causal_mask", "why_positions", "why_quadratic"]


def test_source_strings_are_read_without_running_anything():
    source = '''
import os
why_scale = """
    Dot products grow
    with d_k.
"""
why_positions = "attention " + "ignores order"
why_quadratic = f"a T x T table"
why_causal_mask = os.environ["HOME"]      # not plain text: left to the worker
why_scale = why_scale                     # a name: the literal above stands
'''
    found = from_source(source, IDS)
    assert found == {"why_scale": "\n    Dot products grow\n    with d_k.\n",
                     "why_positions": "attention ignores order",
                     "why_quadratic": "a T x T table"}
    assert from_source("why_scale = 'x'\ndef broken(:\n", IDS) == {"why_scale": "x"}


def test_an_answer_is_cleaned_and_kept_as_text():
    got = answers(QUESTIONS, source='why_scale = """\n    First line.\r\n      indented\r\n"""\n')
    a = got["why_scale"]
    assert a.status == Status.PENDING and a.score is None
    assert a.answer == "First line.\n  indented"
    assert got["why_positions"].status == Status.NOT_ATTEMPTED and \
        got["why_positions"].score == 0


def test_a_huge_answer_is_cut_and_the_student_told():
    text = "x" * (MAX_CHARS * 50)
    got = answers(QUESTIONS, reported={"why_scale": {"text": text[:MAX_CHARS],
                                                      "length": len(text)}})["why_scale"]
    assert len(got.answer) == MAX_CHARS and got.length == len(text)
    assert any("1,000,000 characters" in n and "first 20,000" in n for n in got.notes)


def test_lone_surrogates_and_controls_stay_storable_text():
    got = answers(QUESTIONS, reported={"why_scale": {"text": "a\ud800b\x1b[2Jc\u202eevil",
                                                      "length": 14}})["why_scale"]
    assert got.answer == "a\ufffdb\x1b[2Jc\u202eevil"
    got.answer.encode("utf-8")   # storable in SQLite and in every output


def test_a_value_that_is_not_text_is_no_answer_with_a_note():
    got = answers(QUESTIONS, reported={"why_scale": {"type": "int"}},
                  source="why_scale = 42\n")["why_scale"]
    assert got.status == Status.NOT_ATTEMPTED
    assert any("holds a value of type int, not text" in n for n in got.notes)


def test_the_worker_report_wins_over_the_source_and_the_source_backs_it_up():
    source = 'why_scale = "as written"\nwhy_positions = "from the source"\n'
    got = answers(QUESTIONS, reported={"why_scale": {"text": "as run", "length": 6}},
                  source=source)
    assert got["why_scale"].answer == "as run"
    assert got["why_positions"].answer == "from the source"


def _notebook_with(answers_by_id: dict[str, str]) -> str:
    nb = build_notebook(load_assignment("attention"))
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        for qid, text in answers_by_id.items():
            if qid in tags:
                cell["source"] = text
    return nbformat.writes(nb)


def test_notebook_answers_are_the_cells_tagged_with_the_id():
    sub = read_notebook(_notebook_with({"why_scale": "Scores grow with **d_k**."}))
    md = from_markdown(sub.tagged_markdown, IDS)
    got = answers(QUESTIONS, markdown=md, source=sub.source)
    assert got["why_scale"].answer == "Scores grow with **d_k**."
    # The untouched cells hold otter's placeholder: not an answer.
    assert got["why_positions"].status == Status.NOT_ATTEMPTED


def test_a_placeholder_cell_falls_back_to_a_code_cell_variable():
    nb = json.loads(_notebook_with({}))
    nb["cells"].append(nbformat.v4.new_code_cell('why_positions = "set, not sequence"'))
    sub = read_notebook(json.dumps(nb))
    got = answers(QUESTIONS, markdown=from_markdown(sub.tagged_markdown, IDS),
                  source=sub.source)
    assert got["why_positions"].answer == "set, not sequence"


@pytest.mark.parametrize("bad_tags", [["why_scale", 7, None], "why_scale", {"a": 1}])
def test_malformed_tags_never_break_reading_a_notebook(bad_tags):
    nb = json.loads(_notebook_with({"why_scale": "kept"}))
    for cell in nb["cells"]:
        if "why_scale" in cell.get("metadata", {}).get("tags", []):
            cell["metadata"]["tags"] = bad_tags
    sub = read_notebook(json.dumps(nb))
    got = from_markdown(sub.tagged_markdown, IDS)
    assert got.get("why_scale", {}).get("text") in (None, "kept")


def test_the_notebook_marks_written_questions_for_otter_export():
    nb = build_notebook(load_assignment("attention"))
    sources = [c["source"] for c in nb.cells]
    for qid in IDS:
        i = next(n for n, c in enumerate(nb.cells) if qid in c["metadata"].get("tags", []))
        assert nb.cells[i]["cell_type"] == "markdown"
        assert "otter_answer_cell" in nb.cells[i]["metadata"]["tags"]
        assert nb.cells[i - 1]["source"].startswith("<!-- BEGIN QUESTION -->")
        assert nb.cells[i + 1]["source"] == "<!-- END QUESTION -->"
    # The answer strings of the template are not code cells of the notebook.
    assert not any(s.startswith("why_scale =") for s in sources)


def test_check_lists_the_unanswered_questions_and_never_scores_them(tmp_path):
    from helpers import SUBMISSIONS, cli_in_process

    sub = tmp_path / "attention.py"
    sub.write_text((SUBMISSIONS / "correct" / "einsum_style.py").read_text()
                   + '\nwhy_scale = "Large scores saturate the softmax."\n')
    r = cli_in_process("check", str(sub), "-a", "attention")
    assert r.returncode == 0, r.stdout + r.stderr         # the public cases decide it
    # No written point in the total: the public cases' points only.
    assert f"{sub}: {PUBLIC_MAX}/{PUBLIC_MAX}" in r.stdout
    assert "[HAND] why_scale (written, 3 points): answered (5 words); graded by hand after " \
        "you submit" in r.stdout
    assert "Written questions still unanswered: why_causal_mask, why_positions, " \
        "why_quadratic (graded by hand after you submit)." in r.stdout
