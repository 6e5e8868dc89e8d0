"""Terminal output: the student's per-question feedback and the instructor's summary table.

Content comes from the one case renderer (`render.py`); every line goes through
`safetext.visible`, so a name or message from the student cannot move the cursor, clear the
screen or start a line of its own.
"""
from __future__ import annotations

from .render import render_question
from .results import QuestionResult, SubmissionResult
from .safetext import visible
from .status import MARKS, SHORT


def _num(x: float) -> str:
    return f"{x:g}"


def question_lines(q: QuestionResult, *, show_passed: bool = False) -> list[str]:
    view = render_question(q)
    lines = [f"[{MARKS.get(view.status, '?')}] {q.id}: {_num(view.score)}/"
             f"{_num(view.max_score)} ({view.status})"]
    if view.not_attempted:
        return lines + [f"       {visible(m)}" for m in view.todo]
    for c in view.cases:
        if c.passed:
            if show_passed:
                lines.append(f"       ok    {visible(c.name)}")
            continue
        tag = "hidden" if c.hidden else "case"
        lines.append(f"       {tag:<6} '{visible(c.name)}': {visible(c.first_line)}")
        lines += [f"                 {visible(more)}" for more in c.more_lines]
        if c.hint:
            lines.append(f"             {visible(c.hint)}")
        if c.repeats:
            lines.append(f"             {c.repeats_line}")
    lines += [f"       {visible(n)}" for n in view.notes]
    return lines


def review_mark(result: SubmissionResult) -> str:
    """"FLAG" for a row flagged for the instructor's review (hard evidence or a doubt of the
    source scan, such as a scan cut short), else "": such a row is never shown as a plain
    pass."""
    return "FLAG" if result.integrity else ""


def submission_text(result: SubmissionResult, *, show_passed: bool = False) -> str:
    mark = review_mark(result)
    lines = [f"{visible(result.path)}: {_num(result.score)}/{_num(result.max_score)}"
             + (f"  [{mark}: flagged for review]" if mark else "")]
    if result.error:
        lines.append(f"  problem: {visible(result.error)}")
    lines += [f"  {visible(n)}" for n in result.notes]
    for q in result.questions.values():
        lines += ["  " + line for line in question_lines(q, show_passed=show_passed)]
    return "\n".join(lines)


def summary_table(results: list[SubmissionResult], question_ids: list[str]) -> str:
    """One row per submission, one column per question, for the instructor's terminal."""
    labels = [visible(r.student or r.path) for r in results]
    width = min(max([10] + [len(label) for label in labels]), 48)
    cols = [max(len(q), 7) for q in question_ids]
    header = f"{'submission':<{width}}  " + "  ".join(
        f"{q:>{w}}" for q, w in zip(question_ids, cols)) + "    total"
    lines = [header, "-" * len(header)]
    for r, label in zip(results, labels):
        name = label if len(label) <= width else "…" + label[-(width - 1):]
        cells = []
        for q, w in zip(question_ids, cols):
            qr = r.questions.get(q)
            cell = "-" if qr is None else f"{_num(qr.score)}/{_num(qr.max_score)}"
            if qr is not None and qr.status in SHORT:
                cell = SHORT[qr.status] + " " + cell
            cells.append(f"{cell:>{w}}")
        mark = review_mark(r)
        lines.append(f"{name:<{width}}  " + "  ".join(cells) +
                     f"  {_num(r.score):>4}/{_num(r.max_score)}" + (f"  {mark}" if mark else ""))
    return "\n".join(lines)

