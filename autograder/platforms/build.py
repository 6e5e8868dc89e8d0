"""What `autograder build` writes, gathered for its callers (each platform's `build.py` makes
its part; `registry.build_all` runs them all):

* `student`: the student bundle (`<name>-student/` and a zip holding that folder): the template
  `.py` and notebook, the engine, and the assignment's PUBLIC question files and snapshots.
  Hidden cases are cut out of the question files by their syntax tree (every `@test_case`
  function marked hidden), no reference code is copied, so `autograder check` and
  `grader.check` run from snapshots, and its `assignment.toml` keeps no grader-only key or table.
* `gradescope`: a Gradescope autograder zip (`<name>-gradescope.zip`): `setup.sh`,
  `run_autograder`, the engine and the full assignment (hidden cases and the reference
  included); it grades with the sandboxed `autograder grade` and converts its JSON
  (`autograder/platforms/gradescope/run.py`).
* `classroom50`: the folder for Classroom 50 (`<name>-classroom50/`): its `autograder.py`, the
  engine and the assignment's public cases (hidden ones and the reference only on request: the
  folder is publicly downloadable).
* `otter`: an otter-grader autograder zip (`<name>-otter.zip`), made with `otter generate`, for
  instructors who already run otter.

`bundle` holds what they are made of. Every bundle keeps the assignment's data in one folder
whose `assignment.toml` points at a copy of the template (`template/`) and, where shipped, of the
reference (`reference/`).
"""
from __future__ import annotations

from .bundle import (ENGINE_DIR, GRADER_ONLY_KEYS, GRADER_ONLY_TABLES, TORCH_CPU_INDEX,
                     BuildError, case_visibility, drop_toml_tables, grader_only_files,
                     gradescope_settings, pinned_requirements,
                     question_files, rewrite_toml, snapshot_keys,
                     strip_hidden_cases, write_assignment_folder, write_engine, zip_folder)
from .classroom50.build import HIDDEN_WARNING, build_classroom50
from .gradescope.build import SETUP_PERMISSIONS, build_gradescope
from .otter.build import build_otter
from .student.build import (answer_files, build_student, bundle_files, classroom_workflow,
                      shipped_files, write_student_bundle)

__all__ = [
    "answer_files", "bundle_files", "build_classroom50", "HIDDEN_WARNING", "build_student",
    "build_gradescope", "build_otter", "shipped_files",
    "write_student_bundle", "SETUP_PERMISSIONS",
    "classroom_workflow", "BuildError", "ENGINE_DIR", "GRADER_ONLY_KEYS", "GRADER_ONLY_TABLES",
    "TORCH_CPU_INDEX", "drop_toml_tables",
    "case_visibility", "grader_only_files", "gradescope_settings", "pinned_requirements",
    "question_files", "rewrite_toml", "snapshot_keys",
    "strip_hidden_cases", "write_assignment_folder", "write_engine", "zip_folder",
]
