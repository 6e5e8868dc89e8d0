"""Grading a corpus for `autograder diagnose-eval` through the class-run recipe
(`course/class_run.py`), as `autograder grade` grades a class: one run per track over every
file the evaluation will ask about, then each file's result looked up."""
from __future__ import annotations

from pathlib import Path

from ..course.class_run import RunOptions, run_class
from ..model.assignment import Assignment, load_assignment
from ..model.results import SubmissionResult
from .evaluate import read_header
from .realworld import CORRECT


def corpus_files(corpus: Path, asked: str) -> dict[str, list[Path]]:
    """{track: files} the evaluations grade: the asked track's wrong and correct files, every
    real-world file under its header's track, and each such track's correct files."""
    files: dict[str, list[Path]] = {asked: sorted((corpus / "wrong").glob("*.py"))
                                    + sorted((corpus / "correct").glob("*.py"))}
    for path in sorted((corpus / "realworld").glob("*.py")):
        track = read_header(path).get("assignment") or "attention"
        files.setdefault(track, []).append(path)
    for track in list(files):
        if track in CORRECT:
            files[track] += sorted((corpus / CORRECT[track]).glob("*.py"))
    return {track: list(dict.fromkeys(paths)) for track, paths in files.items()}


class CorpusGrades:
    """Every file of the corpus graded once per track (`grade(track, path)`), a track's files in
    one class run the first time one of them is asked for."""

    def __init__(self, corpus: Path, asked: Assignment, sandbox: str = "auto"):
        self.files = corpus_files(corpus, asked.name)
        self.tracks: dict[str, Assignment] = {asked.name: asked}
        self.sandbox = sandbox
        self._results: dict[tuple[str, Path], SubmissionResult] = {}

    def grade(self, track: str, path: Path) -> SubmissionResult:
        key = (track, Path(path).resolve())
        if key not in self._results:
            self._run(track, [p for p in self.files.get(track, []) if p.resolve() != key[1]]
                      + [Path(path)])
        return self._results[key]

    def graded(self) -> list[tuple[str, Path]]:
        """(track, path) of every file graded so far."""
        return list(self._results)

    def _run(self, track: str, paths: list[Path]) -> None:
        if track not in self.tracks:
            self.tracks[track] = load_assignment(track)
        todo = [p for p in paths if (track, p.resolve()) not in self._results]
        run = run_class(self.tracks[track], [str(p) for p in todo],
                        RunOptions(jobs=1, sandbox=self.sandbox, progress=False))
        for g in run.graded:
            self._results[(track, Path(g.student.file).resolve())] = g.result
