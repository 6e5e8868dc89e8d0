"""What `autograder lint` says about each question's forbidden routines: where they are refused.

For every forbidden routine of a question: how many of torch's dispatcher operators compute it
(refused there, every overload and kernel: `sandbox/forbidden_ops.py`), and every Python
implementation of it found in the installed environment (torch's references and decomposition
tables, SciPy's softmax), which the grading worker refuses as a routine
(`sandbox/library_routines.py`). A routine outside the table is refused by name where the
function is; the listing says so, so that an author sees what is covered.
"""
from __future__ import annotations

from pathlib import Path


def coverage(root: Path) -> list[str]:
    """Lines for the report: one per question that forbids something, then its routines."""
    from ..model.assignment import load_assignment
    from ..grading.runner import question_forbidden
    from ..sandbox.forbidden_ops import ROUTINE_OPS
    from ..sandbox.library_routines import implementations

    assignment = load_assignment(str(root))
    lines: list[str] = []
    for q in assignment.questions:
        names = [n for n in question_forbidden(assignment, q.id) if not n.startswith("autograd.")]
        if not names:
            continue
        lines.append(f"{q.id}: forbids {', '.join(f'`{n}`' for n in names)}")
        ops = sorted({op for n in names for op in ROUTINE_OPS.get(n, ())})
        if ops:
            lines.append(f"  refused at torch's dispatcher: {len(ops)} operators "
                         f"({', '.join(ops)})")
        found = sorted(implementations(ops)) if ops else []
        lines.append("  library implementations refused as routines: "
                     + (", ".join(found) if found else "none installed"))
        by_name = [n for n in names if n not in ROUTINE_OPS]
        if by_name:
            lines.append("  refused by name where the function is: "
                         + ", ".join(f"`{n}`" for n in by_name))
    return lines
