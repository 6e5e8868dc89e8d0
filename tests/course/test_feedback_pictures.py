"""The HTML feedback page shows a failing public case's weights beside the expected ones as
heatmaps (a missing causal mask: weight above the diagonal; a softmax over the wrong axis: rows
that do not sum to 1), opened in a real browser; a hidden case's expected values never are."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SUBMISSIONS

from autograder.model.assignment import load_assignment
from autograder.course.report import feedback_html
from autograder.grading.grade import check_in_process
from autograder.feedback.contract import submission_json

CHROMIUM = "/usr/bin/chromium"


def _page(result, title: str, path: Path) -> Path:
    path.write_text(feedback_html(result, title))
    return path


def _in_browser(page: Path, shot: Path) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1000, "height": 1400})
            tab.goto(page.as_uri())
            found = tab.evaluate("""() => ({
                images: [...document.querySelectorAll('li.picture svg')].map(s => ({
                    loaded: s.getBoundingClientRect().width > 300,
                    alt: s.getAttribute('aria-label'),
                    cells: s.querySelectorAll('rect').length,
                    sums: [...s.querySelectorAll('text.row-sum')].map(t => ({
                        text: t.textContent, colour: getComputedStyle(t).fill})),
                    texts: [...s.querySelectorAll('text')].map(t => t.textContent)})),
                code: [...document.querySelectorAll('li.hint code')].map(c => c.textContent),
            })""")
            tab.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    return found


def test_mask_ignored_shows_weight_above_the_diagonal(corpus_results, tmp_path):
    result = corpus_results["mask_ignored.py"]        # graded in the sandbox, every case
    cases = [c for q in result.questions.values() for c in q.cases]
    assert not any(c.picture for c in cases if c.hidden)
    shown = [c for c in cases if c.picture and not c.hidden]
    assert {c.name for c in shown} >= {"lesson: causally masked weights"}
    mask = next(c for c in shown if c.name == "lesson: causally masked weights").picture
    # Row 0 may attend only to itself: the expected row is [1, 0, 0]; the student's puts
    # weight above the diagonal.
    assert mask["expected"][0][1:] == [0.0, 0.0] and mask["got"][0][1] > 0.1
    assert (mask["rows"], mask["cols"]) == ("query", "key")
    assert "picture" not in str([c for q in submission_json(result)["questions"].values()
                                 for c in q.get("cases", []) if c["hidden"]])
    found = _in_browser(_page(result, "Attention", tmp_path / "feedback.html"),
                        tmp_path / "feedback.png")
    assert found["images"] and all(i["loaded"] for i in found["images"]), found
    assert len(found["images"]) <= len(shown)
    drawn = next(i for i in found["images"] if i["alt"].startswith(mask["title"]))
    assert drawn["alt"].endswith("the expected values beside yours, as heatmaps")
    # Both panels, their titles, a value in each cell of the small table, each row's sum.
    assert {"expected", "yours", "query", "key", mask["title"]} <= set(drawn["texts"])
    rows, cols = len(mask["expected"]), len(mask["expected"][0])
    assert drawn["cells"] >= 2 * rows * cols
    assert sum(t.count(".") == 1 and t[0].isdigit() for t in drawn["texts"]) >= 2 * rows * cols
    # The expected rows sum to 1 (green); the student's first row does not (red).
    sums = drawn["sums"]
    assert len(sums) == 2 * rows
    assert all(s["text"] == "Σ 1.00" and s["colour"] == "rgb(30, 107, 52)" for s in sums[:rows])
    assert sums[rows]["text"] != "Σ 1.00" or mask["got"][0][1] > 0.1
    assert "scores.masked_fill(mask, float('-inf'))" in found["code"], found["code"]
    assert (tmp_path / "feedback.png").stat().st_size > 20_000


@pytest.mark.parametrize("name, path", [
    ("attention", SUBMISSIONS / "wrong" / "softmax_ignores_dim.py"),
    ("attention_numpy", SUBMISSIONS / "numpy" / "wrong" / "softmax_no_max_subtraction.py")])
def test_a_wrong_softmax_is_drawn_in_both_tracks(name, path, tmp_path):
    result = check_in_process(load_assignment(name), path)
    pictures = [c.picture for c in result.questions["softmax"].cases if c.picture]
    assert len(pictures) == 1
    picture = pictures[0]
    # The expected slices each sum to 1; the student's do not (another axis, or NaN).
    assert all(abs(sum(row) - 1) < 1e-3 for row in picture["expected"])
    assert any(None in row or abs(sum(row) - 1) > 1e-3 for row in picture["got"])
    found = _in_browser(_page(result, name, tmp_path / "feedback.html"),
                        tmp_path / "feedback.png")
    assert found["images"] and all(i["loaded"] for i in found["images"]), found
    # A row of the student's that does not sum to 1 is marked red; the expected ones green.
    colours = {s["colour"] for i in found["images"] for s in i["sums"]}
    assert colours == {"rgb(30, 107, 52)", "rgb(176, 0, 32)"}, colours
