"""The notebook's `grader.check` cells (otter's checks, in the student's kernel) name the likely
mistake as `autograder check` does, from the student bundle alone, in both tracks."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import SUBMISSIONS

from autograder.assignment import load_assignment
from autograder.authoring.notebook import build_notebook
from autograder.build.student import build_student

CASES = {
    "attention": (SUBMISSIONS / "wrong" / "attention_divides_by_dk.py", "attention",
                  "likely mistake: scores divided by d_k instead of sqrt(d_k). Divide q @ k^T "
                  "by the square root of the key size"),
    "attention_numpy": (SUBMISSIONS / "numpy" / "wrong" / "layer_norm_unbiased_variance.py",
                        "block", "likely mistake: layer norm with the unbiased variance"),
}


def check_outputs(nb) -> dict[str, str]:
    """{question: what its grader.check cell shows}."""
    out = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            qid = cell.source.split('"')[1]
            out[qid] = "\n".join(o.get("data", {}).get("text/plain", "") or o.get("text", "")
                                 for o in cell.outputs)
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
def test_grader_check_names_the_likely_mistake(name, tmp_path):
    path, question, line = CASES[name]
    outputs = execute_in_bundle(name, path.read_text(), tmp_path)
    assert "Test case failed" in outputs[question], outputs[question]
    assert line in outputs[question], outputs[question]
    # Only where `check` names it: a passing question says nothing of a mistake.
    passing = [q for q, text in outputs.items() if "All test cases passed" in text]
    assert passing and not any("likely mistake" in outputs[q] for q in passing)
