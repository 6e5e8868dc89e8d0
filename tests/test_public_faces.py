"""The public faces of the engine for assignment authors: what a question file imports
(`autograder.cases`) and what a catalogue of mistakes imports (`autograder.catalogue`). Their
`__all__` is pinned: a name leaves only on purpose (question files written for one version keep
working), and everything listed is importable and documented."""
from __future__ import annotations

import ast
import importlib
import re

import pytest

from helpers import ROOT

PINNED = {
    "autograder.cases": [
        "Question", "questions_in", "GraderError", "CheckFailed", "Problem", "Labels",
        "Record",
        "Property", "rows_sum_to_one", "zero_where",
        "tensor", "array", "to_numpy", "randn", "random_mask", "future_mask",
        "attention_params", "block_params", "upstream_for",
        "snapshot",
        "MISSING", "MissingAnswer", "answer_digest", "answer_form",
    ],
    "autograder.catalogue": [
        "Catalogue", "Family", "Mistake",
        "Evidence", "Predicate", "all_of", "any_of", "not_",
        "changed_input", "computed_in_float32", "equals_expected_transposed", "expected_dtype",
        "float32_rounding", "forbidden_call", "gradient_cut", "lowered_precision",
        "mixed_precision_error", "nan_only_on_large_inputs", "non_finite_where_expected_finite",
        "output_matches_reference", "raised", "raised_precision", "sums_to_one_along",
        "values_right_dtype_wrong",
        "axis_detail", "factor_detail", "fixed_rank", "fixed_rank_detail", "none_unhandled",
        "normalised_along_other_axis", "off_by_constant_factor",
    ],
}


@pytest.mark.parametrize("module", sorted(PINNED))
def test_the_public_face_is_pinned_and_importable(module):
    face = importlib.import_module(module)
    assert sorted(face.__all__) == sorted(PINNED[module])
    for name in face.__all__:
        assert getattr(face, name, None) is not None, name


def _engine_imports(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("autograder")}
    return names


def test_shipped_assignments_import_only_the_public_faces():
    """Question files and catalogues reach the engine through its faces only, so that what
    they may use is what the faces list (the moves of engine modules never break them)."""
    for folder in sorted((ROOT / "assignments").iterdir()):
        if not (folder / "assignment.toml").is_file():
            continue
        for path in sorted(folder.glob("tests/*.py")):
            assert _engine_imports(path) <= {"autograder.cases"}, path
        for path in sorted(folder.glob("mistakes.py")):
            assert _engine_imports(path) <= {"autograder.catalogue"}, path


def test_the_faces_are_documented_for_authors():
    """Every name of a face appears in the page that teaches authors to use it."""
    pages = {"autograder.cases": ROOT / "docs" / "writing-an-assignment.md",
             "autograder.catalogue": ROOT / "docs" / "naming-mistakes.md"}
    for module, page in pages.items():
        text = page.read_text()
        missing = [n for n in PINNED[module] if f"`{n}" not in text]
        assert not missing, (page.name, missing)


def test_the_reference_page_lists_every_name_of_both_faces():
    """docs/authoring-reference.md lists each name of each face under that face's heading, and
    nothing outside the faces as if it were one of them."""
    text = (ROOT / "docs" / "authoring-reference.md").read_text()
    parts = text.split("## `autograder.catalogue`")
    assert len(parts) == 2
    for module, part in zip(("autograder.cases", "autograder.catalogue"), parts):
        rows = [line for line in part.splitlines() if line.startswith("| `")]
        named = set()
        for row in rows:
            for code in re.findall(r"`([A-Za-z_][\w.]*)", row.split(" | ")[0]):
                named.add(code.split(".")[0] if not code.startswith(("q.", "catalogue.",
                                                                      "family.")) else code)
        faces = set(PINNED[module])
        missing = faces - named
        assert not missing, (module, missing)
