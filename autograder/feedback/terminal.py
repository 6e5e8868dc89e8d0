"""Terminal output: the student's per-question feedback and the instructor's summary table.

Content comes from the one case renderer (`render.py`); every line goes through
`safetext.visible`, so a name or message from the student cannot move the cursor, clear the
screen or start a line of its own.
"""
from __future__ import annotations

from .render import render_question
from .totals import Totals
from ..model.results import QuestionResult, SubmissionResult
from ..model.safetext import visible
from ..model.status import MARKS, SHORT
from ..written.render import terminal_lines


def _num(x: float) -> str:
    return f"{x:g}"


def question_lines(q: QuestionResult, *, show_passed: bool = False,
                   said: str | None = None) -> list[str]:
    view = render_question(q, said=said)
    lines = [f"[{MARKS.get(view.status, '?')}] {q.id}: {_num(view.score)}/"
             f"{_num(view.max_score)} ({view.status})"]
    if view.decision:
        lines.append(f"       {visible(view.decision)}")
    if view.summarised:
        return lines + [f"       {visible(m)}" for m in view.todo]
    for c in view.cases:
        if c.passed:
            if show_passed:
                lines.append(f"       ok    {visible(c.name)}")
            continue
        tag = "hidden" if c.hidden else "case"
        lines.append(f"       {tag:<6} '{visible(c.name)}': {visible(c.first_line)}")
        lines += c.tail_lines(" " * 17, " " * 13, " " * 13, shown=visible)
    lines += [f"       {visible(n)}" for n in view.notes]
    return lines


def review_mark(result: SubmissionResult) -> str:
    """"FLAG" for a row flagged for the instructor's review (hard evidence or a doubt of the
    source scan, such as a scan cut short), else "": such a row is never shown as a plain
    pass."""
    return "FLAG" if result.integrity else ""


def submission_text(result: SubmissionResult, *, show_passed: bool = False,
                    check: bool = False) -> str:
    """`check`: the student's own check, whose total leaves out the written questions (they
    are graded by hand: it only says which are still unanswered)."""
    mark = review_mark(result)
    totals = Totals.of(result)
    if check:
        total = f"{_num(totals.autograded)}/{_num(totals.autograded_max)} on the public cases"
    else:
        total = totals.text(sep="/")
    lines = [f"{visible(result.path)}: {total}"
             + (f"  [{mark}: flagged for review]" if mark else "")]
    if result.error:
        lines.append(f"  problem: {visible(result.error)}")
    lines += [f"  {visible(n)}" for n in result.notes]
    for q in result.questions.values():
        lines += ["  " + line for line in question_lines(q, show_passed=show_passed,
                                                         said=result.error)]
    lines += ["  " + line for line in terminal_lines(result.written, check=check)]
    return "\n".join(lines)


def summary_table(results: list[SubmissionResult], question_ids: list[str],
                  standings: list | None = None, late_policy: str | None = None) -> str:
    """One row per submission, one column per question, for the instructor's terminal.
    `standings` (`course.standing.Standing`, one per result) with a `late_policy` add the days
    late and the adjusted total, the one that counts, after the total."""
    labels = [visible(r.student or r.path) for r in results]
    width = min(max([10] + [len(label) for label in labels]), 48)
    totals = [Totals.of(r) for r in results]
    written = any(t.written_max for t in totals)
    if written:   # the written questions' part, with what waits for a grader
        question_ids = list(question_ids) + ["written"]
    rows = []
    for r, t in zip(results, totals):
        cells = []
        for q in question_ids:
            if written and q == "written" and q not in r.questions:
                cells.append(t.written_cell() or "-")
                continue
            qr = r.questions.get(q)
            cell = "-" if qr is None else f"{_num(qr.score)}/{_num(qr.max_score)}"
            if qr is not None and qr.status in SHORT:
                cell = SHORT[qr.status] + " " + cell
            if qr is not None and qr.override is not None:
                cell += "*"
            cells.append(cell)
        rows.append(cells)
    # A column as wide as its widest cell ("missing 0/6" is wider than most question ids).
    cols = [max([len(q), 7] + [len(cells[i]) for cells in rows])
            for i, q in enumerate(question_ids)]
    late = late_policy is not None and standings is not None
    header = f"{'submission':<{width}}  " + "  ".join(
        f"{q:>{w}}" for q, w in zip(question_ids, cols)) + "    total" + \
        ("  days late  adjusted" if late else "")
    lines = [header, "-" * len(header)]
    for i, (r, label, cells) in enumerate(zip(results, labels, rows)):
        name = label if len(label) <= width else "…" + label[-(width - 1):]
        mark = review_mark(r)
        line = f"{name:<{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cells, cols)) + \
            f"  {_num(r.score):>4}/{_num(r.max_score)}"
        if late:
            st = standings[i]
            days = "-" if st.missing else str(st.days_late)
            line += f"  {days:>9}  {_num(st.counted):>8}"
        lines.append(line + (f"  {mark}" if mark else ""))
    waiting = sum(t.waiting for t in totals)
    if waiting:
        lines.append(f"wait: written answers waiting for a grader ({_num(waiting)} points in "
                     "all); the total counts them 0 until they are graded")
    if late:
        lines.append(f"adjusted: the total less {visible(late_policy)}; the total that counts "
                     "(gradebook.csv)")
    if any(q.override is not None for r in results for q in r.questions.values()):
        lines.append("*: points set by --overrides (the reason is in the feedback)")
    return "\n".join(lines)
