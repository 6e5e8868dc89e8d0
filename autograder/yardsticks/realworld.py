"""Measuring diagnosis on real-world-style code, for `autograder diagnose-eval` and the tests.

`<corpus>/realworld/*.py` are submissions written the way people write attention outside the
course (fixed-rank code, an unhandled `mask=None`, two mistakes in one function...). Each has a
header: `# assignment:` (the track, default `attention`), `# loses:` / `# keeps:` (questions) and
`# diagnosis:` (the causes that may be named, comma-separated). Per track this measures

* the share of lost questions where some failing case names a cause, and only expected ones
  ("a named cause of the right kind"), target >= 90%;
* wrong names: a case naming a cause outside its file's `# diagnosis:`, and any cause named on
  the track's correct submissions (`correct/`, `numpy/correct/`), target 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .evaluate import internal_errors, read_header, wanted

TARGET = 0.9
# The correct submissions of each track, under the corpus root.
CORRECT = {"attention": "correct", "attention_numpy": "numpy/correct"}


def expected_causes(header: dict[str, str]) -> set[str]:
    return wanted(header.get("diagnosis"))


@dataclass
class TrackFigures:
    assignment: str
    files: int = 0
    lost: int = 0
    named_right: int = 0
    correct_files: int = 0
    wrong: list[str] = field(default_factory=list)      # "file: question: id"
    missed: list[str] = field(default_factory=list)     # "file: question"
    internal: list[str] = field(default_factory=list)   # "file: question" the grader failed on

    @property
    def share(self) -> float:
        return self.named_right / self.lost if self.lost else 0.0

    def meets(self) -> bool:
        return self.lost > 0 and self.share >= TARGET and not self.wrong and not self.internal

    def report(self, verbose: bool = False) -> str:
        lines = [f"real-world corpus, {self.assignment}: {self.files} submissions, "
                 f"{self.correct_files} correct ones",
                 f"  lost questions with a named cause of the right kind: {self.named_right}/"
                 f"{self.lost} ({100 * self.share:.1f}%, target >= {100 * TARGET:.0f}%)",
                 f"  wrong names (correct submissions included): {len(self.wrong)} (target 0)"]
        lines += [f"  WRONG {w}" for w in self.wrong]
        lines += [f"  INTERNAL ERROR of the grader: {w}" for w in self.internal]
        if verbose or self.missed:
            lines += [f"  no cause named: {m}" for m in self.missed]
        return "\n".join(lines)


def _named(case: Any) -> list[str]:
    return list(getattr(case, "diagnosis", None) or [])


def evaluate_realworld(corpus: Path, grade: Callable[[str, Path], Any]) -> dict[str, TrackFigures]:
    """Grade `corpus/realworld/*.py` and each track's correct submissions with
    `grade(assignment, path)`; the figures per track."""
    corpus = Path(corpus)
    tracks: dict[str, TrackFigures] = {}
    for path in sorted((corpus / "realworld").glob("*.py")):
        header = read_header(path)
        name = header.get("assignment") or "attention"
        track = tracks.setdefault(name, TrackFigures(name))
        track.files += 1
        want = expected_causes(header)
        result = grade(name, path)
        track.internal += [f"{path.name}: {q}" for q in internal_errors(result)]
        for q in result.questions.values():
            for c in q.cases:
                track.wrong += [f"{path.name}: {q.id}: {i}" for i in _named(c) if i not in want]
            if q.score >= q.max_score:
                continue
            track.lost += 1
            if any(_named(c) and set(_named(c)) <= want for c in q.cases):
                track.named_right += 1
            else:
                track.missed.append(f"{path.name}: {q.id}")
    for name, track in tracks.items():
        folder = corpus / CORRECT.get(name, "")
        if name not in CORRECT or not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.py")):
            track.correct_files += 1
            result = grade(name, path)
            track.internal += [f"{path.name} (correct): {q}" for q in internal_errors(result)]
            for q in result.questions.values():
                for c in q.cases:
                    track.wrong += [f"{path.name} (correct): {q.id}: {i}" for i in _named(c)]
    return tracks
