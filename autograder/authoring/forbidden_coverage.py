"""What `autograder lint` says about each question's forbidden routines: where they are refused.

For every question that forbids something: its entries, and what the grading worker refuses
for them (`sandbox/routines.py`: the assignment's `[routines]`, else what the installed torch
gives): how many of torch's dispatcher operators (every overload and kernel), the signature that
library code computing the routine is recognised by, the Python-level functions refused where
they are, and every Python implementation of the operators found in the installed torch
(its references and decomposition tables, `sandbox/library_routines.py`), so that an author
sees what is covered.
"""
from __future__ import annotations

from pathlib import Path


def coverage(root: Path) -> list[str]:
    """Lines for the report: one per question that forbids something, then its routines."""
    from ..grading.runner import question_forbidden
    from ..model.assignment import load_assignment
    from ..sandbox.library_routines import implementations
    from ..sandbox.routines import table_for

    assignment = load_assignment(str(root))
    table = table_for(assignment.routines)
    lines: list[str] = []
    for q in assignment.questions:
        names = [n for n in question_forbidden(assignment, q.id) if not n.startswith("autograd.")]
        if not names:
            continue
        lines.append(f"{q.id}: forbids {', '.join(f'`{n}`' for n in names)}")
        plans = [table.plan(n) for n in names]
        ops = sorted({op for p in plans for op in p.ops})
        if ops:
            lines.append(f"  refused at torch's dispatcher: {len(ops)} operators "
                         f"({', '.join(ops)})")
        found = sorted(implementations(ops)) if ops else []
        lines.append("  library implementations refused as routines: "
                     + (", ".join(found) if found else "none installed"))
        signatures = []
        for p in plans:
            for g in p.signatures:
                shown = " + ".join("(" + " | ".join(group) + ")" for group in g)
                if shown not in signatures:
                    signatures.append(shown)
        if signatures:
            lines.append("  library code computing it (one operator of each group in one "
                         "call): " + "; ".join(signatures))
        python = sorted({t for p in plans for t in p.python})
        if python:
            lines.append("  refused where the function is: " + ", ".join(f"`{t}`" for t in python))
    return lines
