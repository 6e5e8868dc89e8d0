"""Everything that exists because of one platform that runs the grader or reads its results:
one folder per platform, each behind the one interface of `registry.py` (name, build, runner,
its `assignment.toml` table and its lint), which `autograder build` and `autograder lint`
iterate.

| platform | entry point | what it writes |
| --- | --- | --- |
| `student/` | `autograder build` | the student bundle (also a Classroom template repository) |
| `gradescope/` | `run_autograder` (built by `autograder build`) runs `python -m autograder.platforms.gradescope` (`run.py`) | `/autograder/results/results.json` per Gradescope's spec |
| `classroom50/` | the teacher's `autograder.py` (`autograder_script.py`, copied by the build) runs `autograder.platforms.classroom50` (`run.py`) | `./result.json` (`classroom50/result/v1`) and `./release-body.md` |
| `actions/` | the workflow `.github/workflows/classroom.yml` (`run.workflow_yaml`) runs `autograder.platforms.actions` (`run.py`); the old GitHub Classroom reporter's format (`reporter.py`, also `autograder classroom`) | `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`, the log |
| `otter/` | `autograder build` (`otter generate`) | otter-grader's autograder zip |
| `notebook/` | `python -m autograder.platforms.notebook` writes the notebook; `hints.py` names mistakes under `grader.check` | the student notebook |

What they share: `bundle.py` (what every build is made of), `build.py` (its names, gathered),
`checkout.py` (grading a CI checkout: a class of one, through the class-run recipe),
`public_only.py` (a public bundle's left-out hidden cases) and `outputs.py` (files written
whole).
"""
