"""The similarity report as a first reader meets it: copies named as such and listed first
whatever the class shares, each pair placed in the class's own distribution of scores (no
fixed number), the share of each file a pair shares, clusters, the second signal of rare
identical wrong outputs on hidden cases, and a page with margins."""
from __future__ import annotations

import json
import re
import shutil

import pytest

import similarity_class as cls_
from helpers import ROOT, SUBMISSIONS, cli_in_process

EXAMPLES = ROOT / "assignments" / "attention" / "examples"
CHROMIUM = "/usr/bin/chromium"


def _class(root, extra: dict[str, str]):
    cls = root / "class"
    cls.mkdir()
    for f in sorted(EXAMPLES.glob("*.py")):
        shutil.copy(f, cls / f.name)
    for name, text in extra.items():
        (cls / f"{name}.py").write_text(text)
    return cls


def _similarity(cls, out):
    r = cli_in_process("similarity", "-a", "attention", str(cls), "--out", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    return r, json.loads((out / "similarity.json").read_text())


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    """The docs' example class (its files share one solution), with a renamed and reformatted
    copy of dave's, a plain duplicate of bob's, and frank's file with a function added (not a
    copy by the definition, yet scoring above dave's copy)."""
    root = tmp_path_factory.mktemp("first-reader")
    dave = (EXAMPLES / "dave.py").read_text()
    added = "\n\ndef scaled(x, factor):\n    total = x * factor\n    return total + 1\n"
    cls = _class(root, {"dave_copy": cls_.rename(cls_.reformat(dave)),
                        "bob_twin": (EXAMPLES / "bob.py").read_text(),
                        "frank_edited": (EXAMPLES / "frank.py").read_text() + added})
    r, data = _similarity(cls, root / "out")
    return {"stdout": r.stdout, "data": data, "html": (root / "out" / "similarity.html"),
            "root": root}


def _names(pair: dict) -> set[str]:
    return {pair["a_student"], pair["b_student"]}


def test_copies_are_named_and_first_whatever_the_class_shares(examples):
    pairs = examples["data"]["pairs"]
    assert _names(pairs[0]) == {"bob", "bob_twin"} and pairs[0]["copy"] == "identical"
    assert _names(pairs[1]) == {"dave", "dave_copy"}
    assert pairs[1]["copy"] == "identical after normalisation"
    assert all(p["copy"] is None for p in pairs[2:])
    # By score alone the renamed copy would come after frank's edited file: the class shares
    # dave's code, which counts for less.
    edited = next(p for p in pairs if _names(p) == {"frank", "frank_edited"})
    assert edited["score"] > pairs[1]["score"]
    assert "(copy: identical after normalisation)" in examples["stdout"]


def test_the_baseline_is_the_class_own(examples):
    data = examples["data"]
    b = data["baseline"]
    n = data["submissions"]
    assert b["pairs"] == n * (n - 1) // 2
    scores = sorted([p["score"] for p in data["pairs"]] + [0.0] * b["pairs"])[-b["pairs"]:]
    assert b["q1"] <= b["median"] <= b["q3"]
    # The fence is on the scores' scale (below 1, two identical files), or the page says that
    # no pair can stand out.
    far = b["q3"] + 3 * (b["q3"] - b["q1"])
    if far < 1:
        assert b["fence"] == pytest.approx(far, abs=1e-3) and b["no_stand_out"] is None
    else:
        assert b["fence"] is None and b["no_stand_out"] == "scores spread too widely"
    html = examples["html"].read_text()
    assert f"half of the {b['pairs']} pairs score {b['median']:.2f} or less" in html
    assert f"nine in ten {b['p90']:.2f} or less" in html
    if b["fence"] is None:
        assert "No pair can stand out in this class" in html and "lies above 1" in html
    else:
        assert f"A pair scoring above {b['fence']:.2f} (of at most 1" in html
    assert not any(float(x) > 1 for x in re.findall(r"scoring above (\d+\.\d+)", html))
    assert "0.2 or below" not in html and "Around 0.2" not in (ROOT / "docs" /
                                                               "similarity.md").read_text()
    assert all(0 <= p["percentile"] <= 1 for p in data["pairs"]) and scores


def test_each_pair_says_what_share_of_each_file_it_shares(examples):
    pairs = {frozenset(_names(p)): p for p in examples["data"]["pairs"]}
    copy = pairs[frozenset({"dave", "dave_copy"})]
    assert copy["share_a"] == copy["share_b"] == 1.0
    others = [p for p in examples["data"]["pairs"] if p["copy"] is None]
    assert len({(p["share_a"], p["share_b"]) for p in others}) > 1   # not one figure for all
    edited = pairs[frozenset({"frank", "frank_edited"})]
    by_name = {edited["a_student"]: edited["share_a"], edited["b_student"]: edited["share_b"]}
    assert by_name["frank"] == 1.0 and by_name["frank_edited"] < 1.0   # the added function
    html = examples["html"].read_text()
    assert "100% (" in html and "share of their file" in html


def test_copies_of_one_file_form_a_cluster(tmp_path):
    alice = (EXAMPLES / "alice.py").read_text()
    cls = _class(tmp_path, {"alice_renamed": cls_.rename(alice),
                            "alice_reordered": cls_.reorder(alice)})
    _, data = _similarity(cls, tmp_path / "out")
    assert sorted(data["clusters"][0]) == ["alice", "alice_renamed", "alice_reordered"]
    trio = [p for p in data["pairs"] if _names(p) <= {"alice", "alice_renamed",
                                                      "alice_reordered"}]
    assert len(trio) == 3 and {p["cluster"] for p in trio} == {1}


def test_template_only_files_are_no_copies_of_each_other(tmp_path):
    template = (ROOT / "student_template" / "attention.py").read_text()
    cls = _class(tmp_path, {"stub_a": template, "stub_b": cls_.rename(template)})
    _, data = _similarity(cls, tmp_path / "out")
    assert not any({"stub_a", "stub_b"} & _names(p) for p in data["pairs"])


def _left_edges(path) -> list[float]:
    """Where the page's heading and first paragraph start, in a 1200-pixel-wide browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(path.resolve().as_uri())
            return page.evaluate("() => ['h1', 'p'].map(s => "
                                 "document.querySelector(s).getBoundingClientRect().left)")
        finally:
            browser.close()


def test_the_page_has_margins_like_the_report(examples, tmp_path):
    assert all(x >= 16 for x in _left_edges(examples["html"])), "no margin at 1200 pixels"


# ------------------------------------------------------------------ the second signal

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class whose two students give the same rare wrong outputs (one's code renamed from
    the other's), three who share a wrong output too many others give, and two correct."""
    root = tmp_path_factory.mktemp("wrong-outputs")
    cls = root / "class"
    cls.mkdir()
    rare = (SUBMISSIONS / "wrong" / "attention_scale_by_dv.py").read_text()
    common = (SUBMISSIONS / "wrong" / "attention_no_scaling.py").read_text()
    files = {"wen": rare, "wu": cls_.rename(rare), "cai": common,
             "cho": cls_.reorder(common), "chu": cls_.rename(common),
             "ada": (SUBMISSIONS / "correct" / "einsum_style.py").read_text(),
             "ben": (SUBMISSIONS / "correct" / "loop_over_heads.py").read_text()}
    for name, text in files.items():
        (cls / f"{name}.py").write_text(text)
    out = root / "out"
    r = cli_in_process("grade", "-a", "attention", str(cls), "--out", str(out), "--jobs", "1",
                       "--question", "attention", "--similarity")
    assert r.returncode == 0, r.stderr[-3000:]
    return {"out": out, "json": json.loads((out / "similarity.json").read_text()),
            "report": (out / "report.html").read_text(),
            "page": (out / "similarity.html").read_text(),
            "grades": json.loads((out / "grades.json").read_text())}


def test_rare_identical_wrong_outputs_are_listed(graded):
    signal = graded["json"]["shared_wrong_outputs"]
    assert signal["rare_limit"] == 2
    pairs = {frozenset((p["a"], p["b"])): p for p in signal["pairs"]}
    assert set(pairs) == {frozenset({"wen", "wu"})}      # three holders are not rare here
    assert pairs[frozenset({"wen", "wu"})]["cases"]
    assert all(c.startswith("attention: ") for c in pairs[frozenset({"wen", "wu"})]["cases"])
    section = graded["report"].split('id="shared-wrong-outputs"')[1].split("</table>")[0]
    assert "wen" in section and "wu" in section and "cai" not in section
    assert 'id="shared-wrong-outputs"' in graded["page"]


def test_the_signal_shows_no_value(graded):
    digests = {c["output_digest"] for s in graded["grades"]["submissions"]
               for q in s["questions"].values() for c in q["cases"] if c["output_digest"]}
    assert digests                                   # kept for the instructor's file
    for text in (graded["report"], graded["page"], json.dumps(graded["json"])):
        assert not any(d in text for d in digests)
    assert set(graded["json"]["shared_wrong_outputs"]) == {"rare_limit", "groups", "pairs"}
    public = {c["output_digest"] for s in graded["grades"]["submissions"]
              for q in s["questions"].values() for c in q["cases"] if not c["hidden"]}
    assert public == {""}                            # hidden cases only


def test_the_fence_is_on_the_scores_scale_or_no_pair_can_stand_out():
    """A fence is only ever stated below 1, the highest score; otherwise the baseline says
    which reason leaves no pair able to stand out."""
    import numpy as np

    from autograder.course.similarity import (SPREAD_TOO_WIDE, TOO_FEW_PAIRS, baseline)

    narrow = baseline(np.array([0.1] * 30 + [0.12] * 10 + [0.95]), 10)
    assert narrow.fence is not None and narrow.fence < 1 and narrow.no_stand_out is None
    wide = baseline(np.array([0.45] * 20), 10)        # 25 of the 45 pairs share nothing
    assert wide.fence is None and wide.no_stand_out == SPREAD_TOO_WIDE
    few = baseline(np.array([0.9]), 3)
    assert few.fence is None and few.no_stand_out == TOO_FEW_PAIRS
