"""Measuring what a student's own check names, from the student bundle alone, against what the
instructor's grade names on the same public cases (for `autograder diagnose-eval`).

The grade sees every case (hidden ones too, whose evidence can name more) and runs the
reference's variants; the bundle's check sees the public cases and reads the shipped table
(`autograder.diagnose.table`). A *place* is (file, question, mistake id) named on some public
case. Targets: the check carries at least 90% of the grade's places, and none the grade does
not give.
"""
from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..model.assignment import Assignment, load_assignment

TARGET = 0.9


def public_places(result: Any) -> set[tuple[str, str]]:
    """(question, mistake id) for every mistake named on a public case of a result."""
    return {(qid, mid) for qid, q in result.questions.items() for c in q.cases
            if not c.hidden for mid in (c.diagnosis or [])}


@dataclass
class PublicNames:
    assignment: str
    files: int = 0
    grade: set = field(default_factory=set)     # (file, question, mistake id)
    check: set = field(default_factory=set)

    @property
    def carried(self) -> int:
        return len(self.grade & self.check)

    @property
    def share(self) -> float:
        return self.carried / len(self.grade) if self.grade else 1.0

    @property
    def extra(self) -> list:
        return sorted(self.check - self.grade)

    def meets(self) -> bool:
        return self.share >= TARGET and not self.extra

    def add(self, name: str, graded: Any, checked: Any) -> None:
        self.files += 1
        self.grade |= {(name, q, m) for q, m in public_places(graded)}
        self.check |= {(name, q, m) for q, m in public_places(checked)}

    def report(self, verbose: bool = False) -> str:
        lines = [f"public cases from the student bundle, {self.assignment}: {self.files} "
                 "submissions",
                 f"  the grade's named mistakes on public cases that the bundle's check also "
                 f"names: {self.carried}/{len(self.grade)} ({100 * self.share:.1f}%, target "
                 f">= {100 * TARGET:.0f}%)",
                 f"  names the check gives and the grade does not: {len(self.extra)} "
                 "(target 0)"]
        lines += [f"  EXTRA {f}: {q}: {m}" for f, q, m in self.extra]
        if verbose:
            lines += [f"  not named by the check: {f}: {q}: {m}"
                      for f, q, m in sorted(self.grade - self.check)]
        return "\n".join(lines)


@contextlib.contextmanager
def bundle_assignment(assignment: Assignment) -> Iterator[Assignment]:
    """The assignment as the student bundle holds it (public cases, snapshots and the table; no
    reference, no catalogue), from a bundle built in a temporary folder."""
    from ..platforms.notebook.build import student_assignment_dir
    from ..platforms.student.build import write_student_bundle

    with tempfile.TemporaryDirectory() as tmp:
        dest = write_student_bundle(assignment, Path(tmp) / "bundle")
        yield load_assignment(dest / student_assignment_dir(assignment))


def compare_tracks(files: list[tuple[str, Path]], graded: Callable[[str, Path], Any]
                   ) -> dict[str, PublicNames]:
    """For each (track, file): its grade (`graded`) against its check from the track's bundle."""
    from ..grading.grade import check_in_process

    out: dict[str, PublicNames] = {}
    with contextlib.ExitStack() as stack:
        bundles: dict[str, Assignment] = {}
        for track, path in files:
            if track not in bundles:
                bundles[track] = stack.enter_context(bundle_assignment(load_assignment(track)))
            figures = out.setdefault(track, PublicNames(track))
            figures.add(path.name, graded(track, path), check_in_process(bundles[track], path))
    return out
