"""Rendering results as text: the student's per-question feedback and the instructor's table."""
from __future__ import annotations

from .results import PASSED, QuestionResult, SubmissionResult

MARKS = {"passed": "PASS", "partial": "PART", "failed": "FAIL", "not attempted": "TODO",
         "error": "ERR ", "timeout": "TIME", "memory limit": "MEM ", "forbidden call": "FORB",
         "integrity": "INTG"}


def _num(x: float) -> str:
    return f"{x:g}"


def not_attempted_lines(q: QuestionResult) -> list[str]:
    """What a question nobody started says: one line for stubs still raising
    NotImplementedError, else each case's own words (e.g. answers still None)."""
    messages = []
    for c in q.cases:
        if c.message and c.message not in messages:
            messages.append(c.message)
    if not messages or all("NotImplementedError" in m for m in messages):
        return ["not implemented yet (the stub still raises NotImplementedError)"]
    return messages


def question_lines(q: QuestionResult, *, show_passed: bool = False) -> list[str]:
    head = f"[{MARKS.get(q.status, '?')}] {q.id}: {_num(q.score)}/{_num(q.max_score)} ({q.status})"
    lines = [head]
    if q.status == "not attempted":
        lines += [f"       {m}" for m in not_attempted_lines(q)]
        return lines
    previous = None
    repeats = 0
    hints: set[str] = set()
    for c in q.cases:
        if c.status == "passed":
            if show_passed:
                lines.append(f"       ok    {c.name}")
            continue
        tag = "hidden" if c.hidden else "case"
        if (c.message, c.hint) == previous:
            repeats += 1
            continue
        if repeats:
            lines.append(f"             (and {repeats} more case(s) with the same problem)")
            repeats = 0
        lines.append(f"       {tag:<6} '{c.name}': {c.message}")
        if c.hint and c.hint not in hints:      # each likely mistake once per question
            hints.add(c.hint)
            lines.append(f"             {c.hint}")
        previous = (c.message, c.hint)
    if repeats:
        lines.append(f"             (and {repeats} more case(s) with the same problem)")
    lines += [f"       {n}" for n in q.notes]
    return lines


def submission_text(result: SubmissionResult, *, show_passed: bool = False) -> str:
    lines = [f"{result.path}: {_num(result.score)}/{_num(result.max_score)}"]
    if result.error:
        lines.append(f"  problem: {result.error}")
    lines += [f"  {n}" for n in result.notes]
    for q in result.questions.values():
        lines += ["  " + line for line in question_lines(q, show_passed=show_passed)]
    return "\n".join(lines)


def summary_table(results: list[SubmissionResult], question_ids: list[str]) -> str:
    """One row per submission, one column per question, for the instructor's terminal."""
    width = max([10] + [len(r.student or r.path) for r in results])
    width = min(width, 48)
    cols = [max(len(q), 7) for q in question_ids]
    header = f"{'submission':<{width}}  " + "  ".join(
        f"{q:>{w}}" for q, w in zip(question_ids, cols)) + "    total"
    lines = [header, "-" * len(header)]
    for r in results:
        label = r.student or r.path
        name = label if len(label) <= width else "…" + label[-(width - 1):]
        cells = []
        for q, w in zip(question_ids, cols):
            qr = r.questions.get(q)
            cell = "-" if qr is None else f"{_num(qr.score)}/{_num(qr.max_score)}"
            if qr is not None and qr.status not in (PASSED, "partial", "failed"):
                cell = {"not attempted": "todo", "timeout": "time", "memory limit": "mem",
                        "forbidden call": "forb", "error": "err",
                        "integrity": "intg"}.get(qr.status, "?") + " " + cell
            cells.append(f"{cell:>{w}}")
        lines.append(f"{name:<{width}}  " + "  ".join(cells) +
                     f"  {_num(r.score):>4}/{_num(r.max_score)}")
    return "\n".join(lines)
