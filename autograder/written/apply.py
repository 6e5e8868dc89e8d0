"""Hand grades into the results every output of a class run is written from.

`autograder grade --out R` records the run's written answers in `R/review.sqlite` and puts the
grades found there into the results before grades.json, grades.csv, the feedback files, the
report and the gradebook are written: grading the class again keeps the hand grades. An answer
whose text changed since it was graded waits for a grader again ("regrade"): its old grade is
neither kept silently nor dropped (the grader sees it on the page).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..model.written_answer import Status, WrittenAnswer
from ..model.written_spec import WrittenQuestion
from .store import FILE_NAME, Grade, Item, Store, SyncReport, digest, feedback_lines, score_of


def row_keys(results: list) -> list[str]:
    """How the review database names each row: as grades.csv's `student` column does, with
    the file added when two rows share a name."""
    names = [r.student or r.path for r in results]
    seen: dict[str, int] = {}
    for n in names:
        seen[n] = seen.get(n, 0) + 1
    return [f"{n} ({r.path})" if seen[n] > 1 and r.student else n
            for n, r in zip(names, results)]


@dataclass
class Applied:
    store: Store
    sync: SyncReport
    waiting: int = 0
    graded: int = 0
    warnings: list[str] = field(default_factory=list)


def record_and_apply(out: Path, assignment, results: list) -> Applied | None:
    """Record the answers of `results` in `out`/review.sqlite (made on first use) and put its
    grades into them. None when the assignment has no written questions."""
    if not assignment.written:
        return None
    store = Store.create(Path(out) / FILE_NAME, assignment.name, assignment.written)
    keys = row_keys(results)
    sync = store.sync_answers([(key, qid, a.answer) for key, r in zip(keys, results)
                               for qid, a in r.written.items()])
    applied = Applied(store, sync, warnings=list(store.warnings))
    apply_grades(store, assignment.written, results, keys, applied)
    return applied


def apply_grades(store: Store, questions: list[WrittenQuestion], results: list,
                 keys: list[str], applied: Applied | None = None) -> None:
    """Each written answer of `results` as its stored grade makes it: graded (score, items,
    feedback), waiting for a regrade (its answer changed since), or as collected."""
    grades = store.grades()
    rubrics = {q.id: store.rubric(q.id) for q in questions}
    for key, r in zip(keys, results):
        for qid, a in r.written.items():
            g = grades.get((key, qid))
            if g is not None and qid in rubrics:
                graded_answer(a, g, rubrics[qid])
            if applied is not None:
                applied.waiting += a.waiting
                applied.graded += a.status == Status.GRADED


def graded_answer(a: WrittenAnswer, g: Grade, rubric: dict[str, Item]) -> WrittenAnswer:
    if g.answer_digest != digest(a.answer):
        a.status, a.score = Status.REGRADE, None
        a.rubric, a.comment, a.grader = [], "", None
        a.feedback = ["Your answer changed after it was graded; a grader reads it again."]
        return a
    a.status = Status.GRADED
    a.score = score_of(g.items, g.adjust, rubric, a.max_score)
    a.rubric = [i for i in g.items if i in rubric]
    a.comment, a.grader = g.comment, g.grader
    a.feedback = feedback_lines(g.items, g.comment, rubric)
    return a
