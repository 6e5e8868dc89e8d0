"""Everything that exists because of one platform that runs the grader or reads its results.

| platform | entry point | what it writes |
| --- | --- | --- |
| Gradescope | `run_autograder` (built by `autograder build`) runs `python -m autograder.platforms.gradescope` (`gradescope.py`) | `/autograder/results/results.json` per Gradescope's spec |
| Gradescope, measured | `gradescope_memory.measure_run` (`autograder benchmark --gradescope-limit`) | a peak-memory figure of one simulated run |
| Classroom 50 | the teacher's `autograder.py` (`classroom50_autograder.py`, copied by the build) runs `python -m autograder.platforms.classroom50` (`classroom50.py`) | `./result.json` (`classroom50/result/v1`) and `./release-body.md` |
| GitHub Actions | the workflow `.github/workflows/classroom.yml` (`actions.workflow_yaml`) runs `python -m autograder.platforms.actions` (`actions.py`) | `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`, the log |
| GitHub Classroom (discontinued) | `autograder classroom` (one question) and the Actions step | the reporter's base64 runner JSON (`github_classroom.py`) |
| any CI checkout | `checkout.grade_or_why_not` (used by Classroom 50 and Actions) | a graded result, or why the grader could not grade |
"""
