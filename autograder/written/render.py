"""Written answers in the words of each output: the terminal, the feedback files (Markdown and
HTML), the class report's section and the CI platforms' summaries.

The student's text is never rendered as markup: the terminal gets `safetext.visible`, Markdown
`safetext.markdown_inline` line by line, HTML jinja2's autoescape with controls and
format characters (bidirectional overrides, zero-width marks) shown as visible codes
(`safetext.shown_text`).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Iterable

from ..model.safetext import markdown_inline, shown_text, visible
from ..model.written_answer import Status, WrittenAnswer
from .collect import summary, words
from ..model.written_spec import WrittenQuestion

def _points(x: float) -> str:
    return f"{x:g}"


def score_text(a: WrittenAnswer) -> str:
    if a.waiting:
        return f"pending/{_points(a.max_score)}"
    return f"{_points(a.points)}/{_points(a.max_score)}"


def status_words(a: WrittenAnswer) -> str:
    if a.status == Status.PENDING:
        return "waiting for a grader"
    if a.status == Status.REGRADE:
        return "changed since it was graded: waiting for a grader again"
    if a.status == Status.NOT_ATTEMPTED and not a.grader:
        return "not answered: 0 points"
    if a.status == Status.MISSING:
        return "no submission: 0 points"
    return "graded by hand"


# ------------------------------------------------------------------ the terminal

def terminal_lines(written: dict[str, WrittenAnswer], *, check: bool = False) -> list[str]:
    """Lines for `check` (which never scores: it says which answers are still empty) and for
    `grade --feedback`."""
    lines = []
    for a in written.values():
        if check:
            mark = "TODO" if a.status == Status.NOT_ATTEMPTED else "HAND"
            lines.append(f"[{mark}] {a.id} (written, {_points(a.max_score)} points): "
                         f"{summary(a)}")
            continue
        mark = "WAIT" if a.waiting else "MISS" if a.status == Status.MISSING else \
            "TODO" if a.status == Status.NOT_ATTEMPTED and not a.grader else "HAND"
        lines.append(f"[{mark}] {a.id}: {score_text(a)} (written: {status_words(a)})")
        lines += [f"       {visible(f)}" for f in a.feedback]
    return lines


def unanswered(written: dict[str, WrittenAnswer]) -> list[str]:
    return [a.id for a in written.values() if a.status == Status.NOT_ATTEMPTED]


def waiting_count(results: Iterable) -> int:
    return sum(a.waiting for r in results for a in r.written.values())


def waiting_line(results: list, review_hint: str = "") -> str | None:
    """The terminal's line on what waits for a grader, None when nothing does."""
    waiting = waiting_count(results)
    if not waiting:
        return None
    students = sum(any(a.waiting for a in r.written.values()) for r in results)
    return (f"{waiting} written answer{'s' if waiting != 1 else ''} of {students} "
            f"student{'s' if students != 1 else ''} wait for a grader" + review_hint)


# ------------------------------------------------------------------ feedback files

def feedback_markdown(written: dict[str, WrittenAnswer]) -> list[str]:
    """The written questions' part of a student's Markdown feedback: score, the feedback of
    each rubric item that applies, the grader's comment, and the answer as it was graded."""
    md = markdown_inline
    lines: list[str] = []
    for a in written.values():
        lines += [f"## {a.id} (written): {score_text(a)} ({status_words(a)})", ""]
        bullets = [f"- {md(f)}" for f in a.feedback] + [f"- {md(n)}" for n in a.notes]
        lines += bullets + ([""] if bullets else [])
        if a.answer:
            lines += ["Your answer:", ""]
            lines += [f"> {md(line)}" if line.strip() else ">" for line in a.answer.split("\n")]
            lines.append("")
    return lines


@dataclass
class AnswerView:
    """One written answer as the feedback page shows it."""
    id: str
    score: str
    status: str
    feedback: list[str]
    notes: list[str]
    answer: str


def feedback_views(written: dict[str, WrittenAnswer]) -> list[AnswerView]:
    return [AnswerView(a.id, score_text(a), status_words(a), list(a.feedback), list(a.notes),
                       shown_text(a.answer)) for a in written.values()]


# ------------------------------------------------------------------ the class report

def report_section(questions: list[WrittenQuestion], results: list) -> dict | None:
    """The report's section on written questions: per question the answers graded, waiting
    and unanswered, the mean of those graded, and how often each rubric item applied."""
    if not questions:
        return None
    rows = []
    for q in questions:
        answers = [r.written[q.id] for r in results if q.id in r.written]
        graded = [a for a in answers if not a.waiting and (a.status != Status.NOT_ATTEMPTED
                                                           or a.grader)]
        counts = collections.Counter(i for a in graded for i in a.rubric)
        rows.append({
            "id": q.id, "points": _points(q.points), "answered":
                sum(a.status != Status.NOT_ATTEMPTED for a in answers),
            "graded": len(graded), "waiting": sum(a.waiting for a in answers),
            "regrade": sum(a.status == Status.REGRADE for a in answers),
            "unanswered": sum(a.status == Status.NOT_ATTEMPTED and not a.grader
                              for a in answers),
            "mean": (sum(a.points for a in graded) / len(graded)) if graded else None,
            "rubric_items": [{"id": i.id, "description": i.description, "points": f"{i.points:+g}",
                       "count": counts.get(i.id, 0),
                       "share": counts.get(i.id, 0) / len(graded) if graded else 0.0}
                      for i in q.rubric],
        })
    return {"questions": rows, "waiting": waiting_count(results)}


# ------------------------------------------------------------------ CI platforms

def ci_lines(written: dict[str, WrittenAnswer]) -> list[str]:
    """What a CI run (Actions, Classroom 50, Gradescope) says of the written questions: they
    are graded by hand later, so they are not in the points shown there."""
    if not written:
        return []
    total = sum(a.max_score for a in written.values())
    lines = [f"Written questions ({_points(total)} points) are graded by hand after the "
             "deadline and are not in these points:"]
    for a in written.values():
        n = words(a.answer)
        said = "not answered yet" if a.status == Status.NOT_ATTEMPTED and not a.answer else \
            f"answered ({n} word{'s' if n != 1 else ''})"
        if not a.waiting and a.status != Status.NOT_ATTEMPTED:
            said += f", graded: {score_text(a)}"
        lines.append(f"- {a.id} ({_points(a.max_score)} points): {said}")
    return lines


def graded_by_hand(written: dict[str, WrittenAnswer]) -> dict[str, WrittenAnswer]:
    """The answers a grader has decided (those a CI platform may count)."""
    return {k: a for k, a in written.items() if a.grader and not a.waiting}


def for_ci(result):
    """A result as a CI platform reports it right after a push: the written answers no grader
    has decided yet are out of its points (they are graded by hand later) and said in notes;
    those a grader decided count as everywhere."""
    if not result.written:
        return result
    later = {k: a for k, a in result.written.items() if k not in graded_by_hand(result.written)}
    result.notes += ci_lines(later)
    result.written = graded_by_hand(result.written)
    return result
