"""`autograder lint`'s checks of an assignment's catalogue of known mistakes (where the
reference is at hand): that its rules can ship to students, that the table of its mistakes'
outcomes on the public cases is recorded and fresh, and that every mistake with a variant fails
some public case, so that a student who makes it can find out before submitting."""
from __future__ import annotations

from pathlib import Path


def _line_of(path: Path, mistake_id: str) -> int:
    """The first line of the catalogue that names the mistake (1 if none does)."""
    try:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if f'"{mistake_id}"' in line or f"'{mistake_id}'" in line:
                return n
    except OSError:
        pass
    return 1


def mistake_errors(root: Path) -> list[tuple[Path, int, str, str]]:
    """(file, line, message, fix) for each problem found."""
    from ..model.assignment import AssignmentError, load_assignment
    from ..diagnose.catalogue import catalogue_for, catalogue_path
    from ..diagnose.portable import portability_problems
    from .paths import shown_assignment
    from .mistake_table import about, table_problem

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
                          f"run `autograder snapshot -a {shown_assignment(root)}`")]
    for mid in (about(assignment) or {}).get("not_caught", []):
        m = catalogue.mistakes.get(mid)
        name = f" ({m.name})" if m is not None and m.name else ""
        errors.append((path, _line_of(path, mid),
                       f"no public case catches the mistake {mid}{name}: its variant gives the "
                       "reference's outcome on every public input, so a student who makes it "
                       "passes every public check",
                       "add a public case whose (new) input shows it, then `autograder snapshot`"))
    return errors
