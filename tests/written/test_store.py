"""review.sqlite: grades with versions (a conflicting change is refused, not written over),
the audit log, answers that change after grading, rubric edits that re-score, transactions,
grouping and the CSV path."""
from __future__ import annotations

import csv
import json
import sqlite3
from dataclasses import replace

import pytest

from autograder.model.assignment import load_assignment
from autograder.written.groups import group_answers, suggestion
from autograder.written.sheet import export_csv, import_csv
from autograder.model.written_spec import RubricItem
from autograder.written.store import Conflict, Store, StoreError, score_of
from alike_answers import LONG, SAME_THING, WORD_SALAD

QUESTIONS = load_assignment("attention").written
SCALE = "Dot products grow with d_k, so the softmax saturates and gradients vanish."


@pytest.fixture
def store(tmp_path):
    s = Store.create(tmp_path / "review.sqlite", "attention", QUESTIONS)
    s.sync_answers([("ann", "why_scale", SCALE), ("ben", "why_scale", SCALE + "!"),
                    ("cat", "why_scale", "Attention treats tokens as a set."),
                    ("dan", "why_scale", ""), ("ann", "why_positions", "A set.")])
    return s


def test_two_graders_one_conflict_refused_with_who_and_when(store):
    # Both load the answer while it has no grade (version 0).
    assert store.save("why_scale", [("ann", 0)], items=["grow"], adjust=0, comment="",
                      who="grader-a") == {"ann": 1}
    with pytest.raises(Conflict, match="grader-a changed this grade at"):
        store.save("why_scale", [("ann", 0)], items=["grow", "saturate"], adjust=0,
                   comment="", who="grader-b")
    g = store.grades()[("ann", "why_scale")]
    assert (g.items, g.grader, g.version) == (["grow"], "grader-a", 1)   # nothing overwritten
    # From the current version, the second grader's change goes through.
    store.save("why_scale", [("ann", 1)], items=["grow", "saturate"], adjust=0, comment="",
               who="grader-b")
    assert store.grades()[("ann", "why_scale")].version == 2


def test_a_group_is_graded_whole_or_not_at_all(store):
    store.save("why_scale", [("ben", 0)], items=["grow"], adjust=0, comment="", who="a")
    with pytest.raises(Conflict):   # ann is new (0), ben moved on (1): nothing is written
        store.save("why_scale", [("ann", 0), ("ben", 0)], items=[], adjust=3, comment="",
                   who="b")
    assert ("ann", "why_scale") not in store.grades()


def test_the_audit_log_says_who_when_before_and_after(store):
    store.save("why_scale", [("ann", 0)], items=["grow"], adjust=0, comment="first",
               who="grader-a")
    store.save("why_scale", [("ann", 1)], items=["grow", "gradients"], adjust=0.5,
               comment="second", who="grader-b")
    last, first = store.audit()[:2]
    assert (first["who"], first["action"], first["student"], first["question"]) == \
        ("grader-a", "grade", "ann", "why_scale")
    assert first["before"] is None and json.loads(first["after"])["comment"] == "first"
    assert last["who"] == "grader-b" and last["at"].endswith("Z")
    assert json.loads(last["before"]) == {"items": ["grow"], "adjust": 0.0, "comment": "first"}
    assert json.loads(last["after"]) == {"items": ["grow", "gradients"], "adjust": 0.5,
                                         "comment": "second"}


def test_an_answer_changed_after_grading_waits_for_a_grader_again(store):
    store.save("why_scale", [("ann", 0)], items=["grow"], adjust=0, comment="", who="a")
    same = store.sync_answers([("ann", "why_scale", SCALE)])
    assert same.regrade == [] and same.changed == 0
    report = store.sync_answers([("ann", "why_scale", "Something else entirely.")])
    assert report.regrade == [("ann", "why_scale")]
    groups = group_answers("why_scale", store.answers("why_scale"), store.grades("why_scale"),
                           set(), "salt")
    member = next(m for g in groups for m in g.members if m.student == "ann")
    assert member.status == "regrade" and member.grade.items == ["grow"]   # shown, not lost
    assert store.audit()[0]["action"] == "answer changed after grading"


def test_editing_a_rubric_item_rescores_every_answer_it_applies_to(store):
    store.save("why_scale", [("ann", 0), ("ben", 0)], items=["grow", "saturate"], adjust=0,
               comment="", who="a")
    rubric = store.rubric("why_scale")
    assert score_of(["grow", "saturate"], 0, rubric, 3) == 2
    with pytest.raises(Conflict):
        store.edit_item("why_scale", "grow", description="d", points=1.5, feedback="f",
                        version=0, who="b")
    assert store.edit_item("why_scale", "grow", description="grows", points=1.5,
                           feedback="f", version=rubric["grow"].version, who="b") == 2
    assert score_of(["grow", "saturate"], 0, store.rubric("why_scale"), 3) == 2.5
    assert store.audit()[0]["action"] == "edit rubric item"


def test_written_toml_edits_reach_the_rubric_unless_a_grader_edited_the_item(tmp_path):
    path = tmp_path / "review.sqlite"
    Store.create(path, "attention", QUESTIONS)
    scale = QUESTIONS[0]
    changed = [replace(scale, rubric=(replace(scale.rubric[0], points=2.0),
                                      *scale.rubric[1:]))] + QUESTIONS[1:]
    s = Store.create(path, "attention", changed)
    assert s.rubric("why_scale")["grow"].points == 2.0 and not s.warnings
    s.edit_item("why_scale", "saturate", description="page", points=1, feedback="",
                version=s.rubric("why_scale")["saturate"].version, who="a")
    again = [replace(scale, rubric=(scale.rubric[0], replace(scale.rubric[1], points=0.5),
                                    *scale.rubric[2:]))] + QUESTIONS[1:]
    s = Store.create(path, "attention", again)
    assert s.rubric("why_scale")["saturate"].description == "page"
    assert any("page's version is kept" in w for w in s.warnings)


def test_a_failed_transaction_leaves_nothing(store):
    with pytest.raises(KeyError):
        store.save_all([("why_scale", [("ann", 0)], ["grow"], 0, ""),
                        ("why_scale", [("nobody", 0)], ["grow"], 0, "")], "a", "csv import")
    assert store.grades() == {} and store.audit() == []


def test_the_database_of_another_assignment_is_refused(tmp_path):
    Store.create(tmp_path / "review.sqlite", "attention", QUESTIONS)
    with pytest.raises(StoreError, match="holds the answers of assignment 'attention'"):
        Store.create(tmp_path / "review.sqlite", "attention_numpy", QUESTIONS)
    with pytest.raises(StoreError, match="grade the class"):
        Store.existing(tmp_path / "none.sqlite", "attention", QUESTIONS)


def test_a_killed_writer_loses_only_its_change(store):
    """A transaction that never commits (a server killed mid-grade) leaves the database as
    it was: the other process sees the last committed grade."""
    store.save("why_scale", [("ann", 0)], items=["grow"], adjust=0, comment="", who="a")
    db = sqlite3.connect(store.path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE grades SET items = '[\"saturate\"]' WHERE student = 'ann'")
    db.close()                      # gone without COMMIT
    assert store.grades()[("ann", "why_scale")].items == ["grow"]


# ------------------------------------------------------------------ groups

def test_identical_and_near_identical_answers_form_one_group_in_a_stable_order(store):
    answers, grades = store.answers("why_scale"), store.grades("why_scale")
    groups = group_answers("why_scale", answers, grades, set(), "salt")
    by_members = sorted(sorted(m.student for m in g.members) for g in groups)
    assert by_members == [["ann", "ben"], ["cat"], ["dan"]]
    assert groups[-1].status == "unanswered"          # the empty answers come last
    again = group_answers("why_scale", list(reversed(answers)), grades, set(), "salt")
    assert [g.key for g in again] == [g.key for g in groups]
    # A split answer is graded on its own.
    split = group_answers("why_scale", answers, grades, {"ben"}, "salt")
    assert sorted(len(g.members) for g in split) == [1, 1, 1, 1]


def test_the_closest_graded_answer_is_suggested(store):
    store.save("why_scale", [("cat", 0)], items=["sums_to_one"], adjust=0, comment="",
               who="a")
    store.sync_answers([("eve", "why_scale", "Attention treats the tokens as a set"),
                        *[(s, "why_scale", t) for s, t in
                          [("ann", SCALE), ("cat", "Attention treats tokens as a set.")]]])
    groups = group_answers("why_scale", store.answers("why_scale"),
                           store.grades("why_scale"), set(), "salt")
    eve = next(g for g in groups if g.members[0].student == "eve"
               or any(m.student == "eve" for m in g.members))
    if any(m.student == "cat" for m in eve.members):   # near-identical: the same group
        assert eve.status == "mixed"
    else:
        s = suggestion(eve, groups)
        assert s["items"] == ["sums_to_one"] and s["similarity"] >= 60


def test_suggestions_go_to_answers_that_say_the_same_thing_not_to_a_word_salad(tmp_path):
    """A word salad holds a full-marks answer's words (word-set containment gave it 97 and
    that answer's decision); answers that say the same thing, reworded, reordered or
    near-identical (split off their group), are offered the graded answer's decision."""
    from rapidfuzz import fuzz

    from autograder.written.groups import normalise

    s = Store.create(tmp_path / "review.sqlite", "attention", QUESTIONS)
    s.sync_answers([("ann", "why_scale", SCALE), ("lea", "why_scale", LONG),
                    ("kim", "why_scale", WORD_SALAD),
                    *[(who, "why_scale", text) for who, (text, _) in SAME_THING.items()]])
    full = ["grow", "saturate", "gradients"]
    for who in ("ann", "lea"):
        s.save("why_scale", [(who, 0)], items=full, adjust=0, comment="", who="a")
    assert fuzz.token_set_ratio(normalise(WORD_SALAD), normalise(SCALE)) > 90   # the old way
    groups = group_answers("why_scale", s.answers("why_scale"), s.grades("why_scale"),
                           {"fay"}, "salt")
    of = {g.members[0].student: g for g in groups}
    assert suggestion(of["kim"], groups) is None
    aliases = {m.student: m.alias for g in groups for m in g.members}
    for who, (_, source) in SAME_THING.items():
        offered = suggestion(of[who], groups)
        assert offered is not None, who
        assert offered["items"] == full and offered["from"] == aliases[source], who
        assert 70 <= offered["similarity"] <= 100


# ------------------------------------------------------------------ CSV

def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_export_then_import_applies_grades_with_the_documented_rules(store, tmp_path):
    sheet = tmp_path / "grades.csv"
    assert export_csv(store, QUESTIONS, sheet) == 5
    rows = _rows(sheet)
    assert list(rows[0])[:5] == ["student", "question", "points", "rubric", "comment"]
    for row in rows:
        if (row["student"], row["question"]) == ("ann", "why_scale"):
            row["rubric"] = "grow; saturate"                 # items, no points: their sum
        if (row["student"], row["question"]) == ("ben", "why_scale"):
            row["points"] = "1.5"                           # points, no items
        if (row["student"], row["question"]) == ("cat", "why_scale"):
            row.update(points="2", rubric="grow", comment="=HYPERLINK(\"x\")")
    with open(sheet, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    checked = import_csv(store, QUESTIONS, sheet, "offline")
    assert not checked.errors and len(checked.changes) == 3
    grades, rubric = store.grades(), store.rubric("why_scale")
    assert score_of(grades[("ann", "why_scale")].items, grades[("ann", "why_scale")].adjust,
                    rubric, 3) == 2
    assert grades[("ben", "why_scale")].items == [] and grades[("ben", "why_scale")].adjust == 1.5
    cat = grades[("cat", "why_scale")]
    assert score_of(cat.items, cat.adjust, rubric, 3) == 2 and cat.comment.startswith("=")
    # Exported again, the comment cannot start a formula; imported again, nothing changes.
    export_csv(store, QUESTIONS, sheet)
    assert next(r for r in _rows(sheet) if r["student"] == "cat")["comment"].startswith("'=")
    again = import_csv(store, QUESTIONS, sheet, "offline")
    assert not again.errors and again.changes == [] and again.unchanged == 3


def test_one_bad_row_applies_none_and_every_bad_row_is_named(store, tmp_path):
    sheet = tmp_path / "bad.csv"
    sheet.write_text(
        "student,question,points,rubric,comment\n"
        "ann,why_scale,2,,fine\n"
        "nobody,why_scale,1,,\n"
        "ann,why_nothing,1,,\n"
        "ben,why_scale,,grow;nope,\n"
        "cat,why_scale,7,,\n"
        "cat,why_positions,,,a comment alone\n"
        "ann,why_scale,1,,twice\n", encoding="utf-8")
    checked = import_csv(store, QUESTIONS, sheet, "offline")
    text = "\n".join(checked.errors)
    assert "row 3: no answer of 'nobody'" in text
    assert "row 4: unknown question 'why_nothing'" in text
    assert "row 5: unknown rubric item(s) 'nope'" in text
    assert "row 6: points 7 are not between 0 and 3" in text
    assert "row 7: " in text and "row 8: 'ann' and why_scale appear twice" in text
    assert store.grades() == {}                      # row 2 was fine, and is not applied


def test_the_sheet_shows_format_characters_as_codes_and_reads_them_back(tmp_path):
    """A name and an answer with a right-to-left override show it as a code in the sheet; the
    row, written back with points, grades that student. Two names the codes cannot tell
    apart are refused, never guessed."""
    s = Store.create(tmp_path / "review.sqlite", "attention", QUESTIONS)
    s.sync_answers([("ev\u202eil", "why_scale", "scores \u202egrow\u202c"),
                    ("ann", "why_scale", SCALE), ("x\u2066y", "why_scale", SCALE),
                    ("x<U+2066>y", "why_scale", SCALE)])
    sheet = tmp_path / "grades.csv"
    export_csv(s, QUESTIONS, sheet)
    text = sheet.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\u2066" not in text
    rows = _rows(sheet)
    evil = next(r for r in rows if r["student"] == "ev<U+202E>il")
    assert evil["answer"] == "scores <U+202E>grow<U+202C>"
    evil["points"] = "2"
    with open(sheet, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    checked = import_csv(s, QUESTIONS, sheet, "offline")
    assert not checked.errors and len(checked.changes) == 1
    assert s.grades()[("ev\u202eil", "why_scale")].adjust == 2
    for r in rows:
        r["points"] = "1" if r["student"] == "x<U+2066>y" else ""
    with open(sheet, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    checked = import_csv(s, QUESTIONS, sheet, "offline")
    assert any("'x<U+2066>y' names 2 students" in e for e in checked.errors), checked.errors


def test_a_grade_changed_after_the_export_is_not_written_over(store, tmp_path):
    sheet = tmp_path / "grades.csv"
    export_csv(store, QUESTIONS, sheet)
    store.save("why_scale", [("ann", 0)], items=["grow"], adjust=0, comment="", who="page")
    rows = _rows(sheet)
    for row in rows:
        if (row["student"], row["question"]) == ("ann", "why_scale"):
            row["points"] = "3"
    with open(sheet, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    checked = import_csv(store, QUESTIONS, sheet, "offline")
    assert any("changed after the export (by page" in e for e in checked.errors)
    assert store.grades()[("ann", "why_scale")].items == ["grow"]


def test_the_lint_finds_rubrics_that_cannot_reach_the_points_and_duplicate_ids(tmp_path):
    from helpers import copy_assignment

    from autograder.authoring.lint import lint

    root = copy_assignment(tmp_path / "a")
    text = (root / "written.toml").read_text()
    text = text.replace('id = "why_positions"\npoints = 2', 'id = "why_positions"\npoints = 5')
    text = text.replace('id = "why_quadratic"', 'id = "why_scale"')
    text = text.replace('id = "saturate"', 'id = "grow"', 1)
    text += '\n[[question]]\nid = "why_empty"\npoints = 1\nprompt = " "\n'
    (root / "written.toml").write_text(text)
    messages = "\n".join(str(e) for e in lint(root, reference=False))
    assert "why_positions: its rubric items reach 2 of its 5 points" in messages
    assert "duplicate id 'why_scale'" in messages
    assert "rubric item id 'grow' is used twice" in messages
    assert "why_empty: the prompt is empty" in messages
    assert "the template has no `why_empty" in messages
    assert "written.toml:" in messages       # findings name the file and line


def test_rubric_items_are_what_the_toml_says():
    scale = QUESTIONS[0]
    assert scale.rubric[0] == RubricItem("grow", scale.rubric[0].description, 1.0,
                                         scale.rubric[0].feedback)
    assert any(i.points < 0 for i in scale.rubric)
