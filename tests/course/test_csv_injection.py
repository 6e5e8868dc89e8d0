"""grades.csv cannot carry a formula: names from Gradescope metadata that start with `=`, `+`,
`-`, `@`, tab or CR are written with a leading apostrophe; the grader's numbers stay numbers;
honest students in the same batch keep full marks."""
import csv
import io
import json

from helpers import AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, WRITTEN, max_points
from hostile_names import CSV_NAMES

from autograder.model.safetext import csv_cell

HONEST = "Ada Lovelace"
FULL = {q: f"{max_points(q):g}" for q in QUESTIONS}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def test_formula_names_are_neutralised_in_grades_csv(hostile_names):
    export, out = hostile_names["class"], hostile_names["out"]   # graded once, with others
    names = CSV_NAMES
    assert names["submission_7"] == HONEST

    # Read as bytes: universal newlines would turn a CR inside a cell into LF.
    rows = list(csv.reader(io.StringIO((out / "grades.csv").read_bytes().decode("utf-8"),
                                       newline="")))
    assert rows[0] == ["student", "file", *QUESTIONS, *WRITTEN, "total", "max_score", "status",
                       "error"]
    by_file = {row[1]: row for row in rows[1:]}
    assert len(by_file) == len(rows) - 1 == hostile_names["students"]
    for sub, name in names.items():
        path = str(export / sub / "attention.py")
        shown = name if sub == "submission_7" else "'" + name
        assert by_file[path] == [shown, path, *[FULL[q] for q in QUESTIONS],
                                 *["0" for _ in WRITTEN], str(AUTOGRADED_MAX), f"{MAX_SCORE}",
                                 "graded", ""]
    # No cell of any row (other students' names, error messages) can start a formula.
    for row in rows[1:]:
        assert not any(cell.startswith(FORMULA_STARTS) for cell in row), row
    # The JSON keeps the names as they are: only the spreadsheet needs the apostrophe.
    data = json.loads((out / "grades.json").read_text())
    rows_json = {s["student"]: s for s in data["submissions"]}
    assert set(names.values()) <= set(rows_json)
    assert all(rows_json[name]["score"] == AUTOGRADED_MAX for name in names.values())


def test_numbers_stay_numbers_and_text_is_neutralised():
    assert [csv_cell(v) for v in (-1.5, 0.0, 35.0, 2)] == ["-1.5", "0", "35", "2"]
    assert [csv_cell(v) for v in ("-1.5", "=1", "+1", "@a", "\tx", "\rx", "a=1", "")] == \
        ["'-1.5", "'=1", "'+1", "'@a", "'\tx", "'\rx", "a=1", ""]
    assert csv_cell(None) == ""
