"""The otter-grader autograder zip (`<name>-otter.zip`), made with `otter generate`, for
instructors who already run otter. Otter copies its `files/` into the submission's folder next
to `tests/`, so the assignment's `assignment.toml`, snapshots, template and reference travel as
`files/` and are found next to the tests, as here. The reference and the engine are folders
(packages), never loose `.py` files, which otter would take for a second submission.
"""
from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from ...model.assignment import Assignment
from ...model.project import normalize
from ..bundle import (TORCH_CPU_INDEX, BuildError, split_torch_pin, gradescope_settings,
                     pinned_requirements, write_assignment_folder, write_engine)


def build_otter(assignment: Assignment, out: Path) -> Path:
    """An otter-grader autograder zip, made by `otter generate`."""
    from otter.generate import main as otter_generate

    settings = gradescope_settings(assignment)
    zip_path = (out / f"{assignment.name}-otter.zip").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        # Otter ships tests/ and copies files/ next to it in the submission's folder: the
        # assignment folder's contents, flattened, make that folder the assignment's root.
        write_assignment_folder(assignment, stage, hidden=True, reference=True)
        write_engine(stage)
        files = sorted(p.name for p in stage.iterdir() if p.name != "tests")
        if any((stage / f).is_file() and f.endswith(".py") for f in files):
            raise BuildError("a loose .py file would break otter's .py submissions")
        torch, rest = split_torch_pin(pinned_requirements())
        (stage / "requirements.txt").write_text(
            "\n".join([f"--extra-index-url {TORCH_CPU_INDEX}"] + ([torch] if torch else [])
                      + [r for r in rest if not normalize(r).startswith("otter-grader")]) + "\n")
        (stage / "otter_config.json").write_text(json.dumps({
            "lang": "python",
            "show_hidden": settings["hidden_visibility"] != "hidden",
        }, indent=2))
        with contextlib.chdir(stage), contextlib.redirect_stdout(io.StringIO()):
            otter_generate(tests_dir="tests", output_path=str(zip_path),
                           config="otter_config.json", requirements="requirements.txt",
                           files=files, python_version="3.11")
    return zip_path
