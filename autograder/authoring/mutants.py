"""`autograder mutants`: mutation analysis of an assignment's cases and catalogue.

Mistakes are derived from the hidden reference automatically (`mutations`: its syntax tree
rewritten one small change at a time), and each mutant is graded like a submission on every
case, public and hidden, with the catalogue naming what it can (`mutant_grading`), each in a
forked worker with a deadline and a memory limit (`forked_tasks`). The report says, for the
author:

* mutants no case catches: a case is missing (the mutant passes every case yet differs from
  the reference on fresh random inputs shaped like the cases');
* mutants only hidden cases catch: a student's `check` passes them (their public cases do not
  show the mistake);
* mutants caught but named by no catalogued mistake, with the checks they fail: a variant that
  computes the mutant (printed with `-v`) would name them;
* equivalent mutants, apart: they pass every case and agree with the reference on fresh inputs
  too, so they compute the same thing (or differ only where no input drawn reaches).

`mutant_report` writes the report and the JSON (and runs the command); `autograder lint
--mutants` reports the first kind as authoring problems.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..model.assignment import Assignment
from ..model.safetext import shown_path
from .mutations import Mutant, derive_mutants

# Where a mutant ends up; every mutant gets exactly one.
PUBLIC, HIDDEN, NOT_CAUGHT, EQUIVALENT, STOPPED = (
    "caught_by_public", "caught_only_by_hidden", "not_caught", "equivalent", "stopped")
OUTCOMES = (PUBLIC, HIDDEN, NOT_CAUGHT, EQUIVALENT, STOPPED)


@dataclass
class MutantResult:
    mutant: Mutant
    outcome: str
    failing: list[dict] = field(default_factory=list)   # the cases it fails
    named: list[str] = field(default_factory=list)      # mistake ids named on them
    differs: dict | None = None     # where fresh inputs show it (no case failing)
    detail: str = ""                # why it was stopped, or why it could not load
    seconds: float = 0.0

    @property
    def caught(self) -> bool:
        return self.outcome in (PUBLIC, HIDDEN)


@dataclass
class Analysis:
    assignment: Assignment
    results: list[MutantResult]
    public_cases: int
    hidden_cases: int
    jobs: int
    seconds: float

    def count(self, outcome: str) -> int:
        return sum(r.outcome == outcome for r in self.results)

    @property
    def caught(self) -> list[MutantResult]:
        return [r for r in self.results if r.caught]

    @property
    def named(self) -> int:
        return sum(bool(r.named) for r in self.caught)

    def figures(self) -> dict[str, int]:
        return {"mutants": len(self.results), **{o: self.count(o) for o in OUTCOMES},
                "caught": len(self.caught), "named": self.named}


def _classify(raw: dict) -> tuple[str, str]:
    status = raw.get("status")
    if status == "import_error":
        return PUBLIC, raw.get("detail", "")
    if status != "graded":
        return STOPPED, f"{status}: {raw.get('detail', '')}".strip(": ")
    failing = raw.get("failing") or []
    if any(not c["hidden"] for c in failing):
        return PUBLIC, ""
    if failing:
        return HIDDEN, ""
    return (NOT_CAUGHT if raw.get("differs") else EQUIVALENT), ""


def require_reference(assignment: Assignment) -> None:
    """ValueError unless the assignment's reference is here: mutants are made from it."""
    if assignment.reference_path is None or not Path(assignment.reference_path).is_file():
        raise ValueError(f"{assignment.name}: the hidden reference is not available here; "
                         "mutants are derived from it")


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def analyse(assignment: Assignment, *, jobs: int = 0, seconds: float | None = None,
            functions: set[str] | None = None,
            progress: Callable[[int, int], None] | None = None) -> Analysis:
    """Derive the reference's mutants and grade each one (see the module's note). `seconds`:
    each mutant's time (default: the assignment's `submission_seconds`); `functions`: mutate
    only these functions of the reference."""
    import torch

    from .forked_tasks import run_forked
    from .mutant_grading import grade_mutant, reference_baseline

    require_reference(assignment)
    start = time.monotonic()
    # One thread per process while the workers fork and run: they share the cores, and a fork
    # keeps only the calling thread of a pool.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        baseline = reference_baseline(assignment)
        mutants = derive_mutants(Path(assignment.reference_path).read_text(), functions)
        jobs = jobs or default_jobs()
        limit = seconds if seconds is not None else assignment.limits.submission_seconds
        finished = 0

        def done(_: int, __: dict) -> None:
            nonlocal finished
            finished += 1
            if progress is not None:
                progress(finished, len(mutants))

        raw = run_forked(len(mutants), lambda i: grade_mutant(baseline, mutants[i]),
                         jobs=jobs, seconds=limit, memory_mb=assignment.limits.memory_mb,
                         done=done)
    finally:
        torch.set_num_threads(threads)
    results = []
    for mutant, r in zip(mutants, raw):
        outcome, detail = _classify(r)
        results.append(MutantResult(mutant, outcome, r.get("failing") or [],
                                    r.get("named") or [], r.get("differs"), detail,
                                    float(r.get("seconds") or 0.0)))
    return Analysis(assignment, results, baseline.public_cases, baseline.hidden_cases, jobs,
                    time.monotonic() - start)


def lint_findings(analysis: Analysis) -> list[tuple[Path, int, str, str]]:
    """(file, line, message, fix) for each mutant no case catches, for `autograder lint`."""
    path = Path(shown_path(analysis.assignment.reference_path))
    return [(path, r.mutant.line,
             f"no case catches the mutant of `{r.mutant.function}` ({r.mutant.describe()}): "
             f"it passes every case, yet on fresh inputs shaped like a check of "
             f"`{r.differs['function']}` {r.differs['how']}",
             f"add a case to question '{r.differs['question']}' whose input shows it, then "
             "`autograder snapshot`")
            for r in analysis.results if r.outcome == NOT_CAUGHT]
