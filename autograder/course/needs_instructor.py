"""Rows of a class run the instructor has to look at, shown where they look: the terminal
table (FLAG), grades.csv's status, report.html's problems, and `grade`'s exit status.

A row needs the instructor when it holds integrity findings (hard evidence of tampering, or
doubts flagged for review), a question the grader itself could not run (internal error), a
reply the worker should never have sent (flagged for review), or when its Classroom repository
had files shipped to it changed (its workflow, the engine, the assignment's data): the class
run grades with the instructor's own copy of those, so the points stand, but the repository's
own CI results cannot be trusted, and the row is flagged for review like a doubt of the source
scan. A roster student claimed by several folders (status "ambiguous") needs a decision too.
"""
from __future__ import annotations

from ..model.results import SubmissionResult
from ..model.status import QuestionStatus

# `autograder grade`'s exit status when every row got its grade but some need the instructor
# (0: all graded, nothing to look at; 2: a mistake in the command; 3: the sandbox cannot run;
# 130: interrupted).
NEEDS_INSTRUCTOR = 4

REPOSITORY_NOTE = "integrity: files shipped to this repository were changed"


def flag_repositories(graded, flags: list[dict], policy: str) -> None:
    """Flag each row whose repository had shipped files changed (`flags`: {"student", "why"}
    from `repository_flags`) for review: a note, and findings of kind "review" in the row's
    `integrity` (grades.json), which the terminal table, grades.csv and the report read."""
    from ..grading.integrity import flag_for_review
    from ..static_scan import Finding

    by_student: dict[str, list[str]] = {}
    for f in flags:
        by_student.setdefault(f["student"], []).append(f["why"])
    for g in graded:
        whys = by_student.get(g.student.name)
        if not whys:
            continue
        evidence = [Finding("review", "repository", 0, "", why=why).to_json() for why in whys]
        note = f"{REPOSITORY_NOTE} ({'; '.join(whys)}); flagged for review"
        flag_for_review(g.result, evidence, note, policy)


def reasons(result: SubmissionResult, status: str | None = None) -> list[str]:
    """Why this row needs the instructor (nothing when it does not); `status`: the row's
    status in grades.csv when a term set one ("ambiguous")."""
    why = []
    if any(f.get("kind") != "review" for f in result.integrity):
        why.append("tampering")
    elif any(f.get("rule") == "repository" for f in result.integrity):
        why.append("repository changed")
    elif result.integrity:
        why.append("review")
    if any(n.startswith("flagged for review") for n in result.notes) and "review" not in why:
        why.append("review")
    if any(q.status == QuestionStatus.INTERNAL_ERROR for q in result.questions.values()) \
            or (not result.questions and result.error):
        why.append("internal error")
    if status == "ambiguous":
        why.append("ambiguous roster match")
    return why


def summary(results: list[SubmissionResult], statuses: list[str | None]) -> str | None:
    """One line naming the rows that need the instructor, or None."""
    rows = [(r, w) for r, s in zip(results, statuses) if (w := reasons(r, s))]
    if not rows:
        return None
    from ..model.safetext import visible

    shown = ", ".join(f"{visible(r.student or r.path)} ({', '.join(w)})" for r, w in rows[:20])
    more = " ..." if len(rows) > 20 else ""
    return (f"{len(rows)} row(s) need you: {shown}{more}; see report.html (exit status "
            f"{NEEDS_INSTRUCTOR})")
