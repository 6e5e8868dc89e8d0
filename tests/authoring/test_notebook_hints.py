"""The notebook's `grader.check` cells (otter's checks, in the student's kernel) name the likely
mistake as `autograder check` does, and show a failing public case's weights beside the expected
ones as heatmaps, from the student bundle alone, in both tracks."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import SUBMISSIONS

from autograder.model.assignment import load_assignment
from autograder.platforms.notebook.build import build_notebook
from autograder.platforms.student.build import build_student

CASES = {
    "attention": (SUBMISSIONS / "wrong" / "attention_divides_by_dk.py", "attention",
                  "likely mistake: scores divided by d_k instead of sqrt(d_k). Divide q @ k^T "
                  "by the square root of the key size"),
    "attention_numpy": (SUBMISSIONS / "numpy" / "wrong" / "softmax_no_max_subtraction.py",
                        "softmax", "likely mistake: softmax without subtracting the maximum"),
}


def check_outputs(nb) -> dict[str, tuple[str, int]]:
    """{question: (the text its grader.check cell shows, how many pictures (SVG) it shows)}."""
    out = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            qid = cell.source.split('"')[1]
            text = "\n".join(o.get("data", {}).get("text/plain", "") or o.get("text", "")
                             for o in cell.outputs)
            images = sum(1 for o in cell.outputs if "image/svg+xml" in o.get("data", {}))
            out[qid] = (text, images)
    return out


def execute_in_bundle(name: str, source: str, folder: Path) -> dict[str, str]:
    """The student notebook holding `source`, executed with nbclient in a fresh bundle."""
    assignment = load_assignment(name)
    bundle = build_student(assignment, folder)
    path = bundle / f"{Path(assignment.student_file).stem}.ipynb"
    path.write_text(nbformat.writes(build_notebook(assignment, source)))
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(bundle)}}).execute()
    return check_outputs(nb)


@pytest.mark.parametrize("name", list(CASES))
def test_grader_check_names_the_likely_mistake_and_shows_the_weights(name, tmp_path):
    path, question, line = CASES[name]
    outputs = execute_in_bundle(name, path.read_text(), tmp_path)
    text, images = outputs[question]
    assert "Test case failed" in text, text
    assert line in text, text
    # The message comes right under "Test case failed", not under the question file's code.
    assert "Error at line" not in text and "CheckFailed:" not in text and "q.check(" not in text
    after = text.split("❌ Test case failed\n", 1)[1].lstrip()
    assert after.startswith(("the ", "softmax", "scaled_dot_product_attention")), after[:200]
    assert images >= 1, "the failing public case's heatmaps are shown under the cell"
    # Only where `check` names it: a passing question says nothing and shows no picture.
    passing = [q for q, (t, _) in outputs.items() if "All test cases passed" in t]
    assert passing and not any("likely mistake" in outputs[q][0] or outputs[q][1]
                               for q in passing)
