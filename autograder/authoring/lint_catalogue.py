"""`autograder lint`'s checks of an assignment's catalogue of known mistakes (where the
reference is at hand): that its rules can ship to students, and that the table of its
mistakes' outcomes on the public cases is recorded and fresh."""
from __future__ import annotations

from pathlib import Path


def mistake_errors(root: Path) -> list[tuple[Path, int, str, str]]:
    """(file, line, message, fix) for each problem found."""
    from ..assignment import AssignmentError, load_assignment
    from ..diagnose.catalogue import catalogue_for, catalogue_path
    from ..diagnose.portable import portability_problems
    from .mistake_table import table_problem

    assignment = load_assignment(root)
    path = catalogue_path(assignment)
    try:
        catalogue = catalogue_for(assignment)
    except AssignmentError as e:
        return [(path, 1, str(e), "correct the catalogue")]
    if catalogue is None or assignment.reference_path is None:
        return []
    errors = [(path, 1, p, "use the symptoms of autograder.diagnose (and all_of, any_of, "
                           "not_) so that students' checks can judge it")
              for p in portability_problems(catalogue)]
    problem = table_problem(assignment)
    if problem:
        return errors + [(assignment.mistake_table, 1, problem,
                          f"run `autograder snapshot -a {root}`")]
    return errors
