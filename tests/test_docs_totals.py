"""The totals the pages of docs/ state in prose are the assignment's, in the words the outputs
use (`autograder/feedback/totals.py`): derived here from the assignment's files, never copied from a
run. (The runs' own outputs are checked by `test_docs_commands.py`'s output markers.)"""
from __future__ import annotations

import re

import pytest

from helpers import AUTOGRADED_MAX, PUBLIC_MAX, ROOT, WRITTEN_MAX

from autograder.model.assignment import load_assignment
from autograder.course.standing import Standing
from autograder.platforms.public_only import assignment_points
from autograder.feedback.totals import Totals, graded_later, out_of, points


def _page(name: str) -> str:
    """The page's text with every run of blank space (line breaks too) made one space."""
    return re.sub(r"\s+", " ", (ROOT / name).read_text())


@pytest.fixture(scope="module")
def attention():
    return assignment_points(load_assignment("attention"))


def test_the_assignment_points_are_derived_from_its_files(attention):
    assert (attention.public, attention.autograded, attention.written) == \
        (PUBLIC_MAX, AUTOGRADED_MAX, WRITTEN_MAX)
    assert attention.hidden == attention.hidden_cases == AUTOGRADED_MAX - PUBLIC_MAX


def test_platforms_page_states_the_assignments_totals(attention):
    page = _page("docs/platforms.md")
    p = points
    assert f"gets every *public* point ({p(attention.public)} of the assignment's " \
           f"{p(attention.autograded)} autograded points for `attention`; its written " \
           f"questions, {p(attention.written)} points," in page
    later = graded_later(attention.hidden_cases, attention.hidden, attention.autograded,
                         attention.written)
    core = later.split("These are the public cases only. ", 1)[1].split(", so the points")[0]
    assert f'"{core[0].lower() + core[1:]}"' in page
    assert f"The grade out of {p(attention.autograded + attention.written)} is" in page
    assert f'"The grade is out of {out_of(attention.autograded, attention.written)}"' in page
    assert f"shows {p(attention.public)} / {p(attention.public)} for that student" in page
    assert "out of 42 in all" not in page


def test_the_students_page_ends_the_check_as_check_does(attention):
    later = graded_later(attention.hidden_cases, attention.hidden, attention.autograded,
                         attention.written).replace("the points here", "the points above")
    assert later in _page("docs/students.md")


def test_the_instructors_page_quotes_a_total_as_the_feedback_writes_it():
    totals = Totals(AUTOGRADED_MAX, AUTOGRADED_MAX, 0, WRITTEN_MAX, WRITTEN_MAX)
    late = Standing(AUTOGRADED_MAX, totals.max_score, round(AUTOGRADED_MAX * 0.9, 6), 1, 0.1,
                    totals=totals)
    page = _page("docs/instructors.md")
    assert f"`Total: {late.total_text()}`" in page
    assert f"`{totals.text(sep='/')}`" in page
    assert "17 points become 19" not in page
