"""The files of a similarity run: similarity.json (every pair above the floor) and
similarity.html (the top pairs side by side), and the rows report.html shows.

Everything shown comes from students: names (folder names, Gradescope metadata), paths and
code. The HTML escapes all of it (jinja2's autoescape; code lines are also made single-line
and visible, so a control character cannot hide or reorder what the instructor reads).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..model.safetext import visible
from .pages import page_environment
from .similarity import (K, MIN_PAIRS_FOR_FENCE, SPREAD_TOO_WIDE, WINDOW, Comparison, Pair,
                         Source)

MAX_SHOWN_LINES = 2000     # per side of a pair in the HTML
MAX_LINE_CHARS = 300
DEFAULT_MIN_SCORE = 0.2    # pairs below it are left out of similarity.json
DEFAULT_MAX_PAIRS = 1000
STRONG = 0.5               # a line shared through a fingerprint at least this rare is marked


def _percent(x: float) -> str:
    return f"{round(100 * x)}%"


def _percentile(x: float) -> str:
    """A pair's place in the class: 97, or 99.6 near the top (where a rounded 100 would hide
    how many pairs score above it)."""
    value = 100 * x
    return f"{value:.0f}" if value < 99 else f"{min(value, 99.9) if x < 1 else 100:.1f}"


def baseline_json(comparison: Comparison) -> dict | None:
    b = comparison.baseline
    if b is None:
        return None
    return {"pairs": b.pairs, "median": round(b.median, 4), "p90": round(b.p90, 4),
            "q1": round(b.q1, 4), "q3": round(b.q3, 4),
            "fence": None if b.fence is None else round(b.fence, 4),
            "no_stand_out": b.no_stand_out}


def baseline_text(comparison: Comparison) -> str:
    """What the class's own scores look like, in words (the page states it, not a fixed
    number)."""
    b = comparison.baseline
    if b is None or not b.pairs:
        return "Fewer than two submissions were compared: there is no pair to rank."
    text = (f"In this class, half of the {b.pairs} pairs score {b.median:.2f} or less and nine "
            f"in ten {b.p90:.2f} or less: that is what sharing looks like here, where everyone "
            "solved the same short exercise. ")
    if b.fence is not None:
        text += (f"A pair scoring above {b.fence:.2f} (of at most 1: the third quartile plus "
                 "three times the spread of the middle half) stands out from the rest of the "
                 "class.")
    elif b.no_stand_out == SPREAD_TOO_WIDE:
        text += (f"No pair can stand out in this class: its scores spread so widely (the middle "
                 f"half from {b.q1:.2f} to {b.q3:.2f}) that the third quartile plus three times "
                 "that spread lies above 1, the score of two identical files. Read the ranking "
                 "from the top; copies are named whatever their score.")
    else:
        text += (f"There are too few pairs (fewer than {MIN_PAIRS_FOR_FENCE}) to say which "
                 "stand out: no pair can. Read the ranking from the top; copies are named "
                 "whatever their score.")
    return text


def wrong_outputs_json(signal) -> dict | None:
    if signal is None:
        return None
    groups, pairs, limit = signal
    return {"rare_limit": limit,
            "groups": [{"question": g.question, "case": g.case, "students": g.students}
                       for g in groups],
            "pairs": [{"a": p.a, "b": p.b, "cases": [f"{g.question}: {g.case}" for g in p.cases]}
                      for p in pairs]}


def similarity_json(assignment: str, comparison: Comparison,
                    template_names: list[str], signal=None) -> dict:
    data = {
        "assignment": assignment,
        "submissions": len(comparison.sources),
        "candidates": comparison.candidates,
        "min_score": comparison.min_score,
        "method": {"k": K, "window": WINDOW, "base": template_names},
        "baseline": baseline_json(comparison),
        "clusters": comparison.clusters,
        "skipped": [{"student": s.student, "path": s.path, "why": s.why}
                    for s in comparison.skipped],
        "pairs": [{"a": p.a.path, "b": p.b.path, "score": p.score,
                   "a_student": p.a.student, "b_student": p.b.student,
                   "copy": p.kind or None, "stands_out": p.stands_out,
                   "percentile": round(p.percentile, 4), "cluster": p.cluster or None,
                   "share_a": round(p.share_a, 4), "share_b": round(p.share_b, 4),
                   "rare_share_a": round(p.rare_share_a, 4),
                   "rare_share_b": round(p.rare_share_b, 4),
                   "shared_fingerprints": p.shared,
                   "shared_lines": [list(x) for x in p.shared_lines]}
                  for p in comparison.pairs],
    }
    if signal is not None:
        data["shared_wrong_outputs"] = wrong_outputs_json(signal)
    return data


def verdict(pair: Pair) -> str:
    """What the pair is, in the words of the page's first column."""
    if pair.kind:
        return f"copy: {pair.kind}"
    return "stands out" if pair.stands_out else ""


def _shown(text: str) -> str:
    line = visible(text.rstrip("\r").replace("\t", "    "))
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 1] + "…"


def _spans(numbers: list[int]) -> str:
    """12, 13, 14, 20 -> "12-14, 20"."""
    out, start, prev = [], None, None
    for n in sorted(set(numbers)):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(out)


def _side(source: Source, weights: dict[int, float], other: dict[int, list[int]]) -> dict:
    cells = dict((line, number) for number, line in source.cells)
    lines = source.text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows = []
    for no, text in enumerate(lines[:MAX_SHOWN_LINES], 1):
        w = weights.get(no)
        rows.append({"no": no, "text": _shown(text), "cell": cells.get(no),
                     "mark": "" if w is None else "strong" if w >= STRONG else "common",
                     "other": _spans(other.get(no, []))})
    return {"student": source.student, "path": source.path, "rows": rows,
            "cut": max(0, len(lines) - MAX_SHOWN_LINES), "notebook": bool(source.cells)}


def pair_view(pair: Pair, number: int) -> dict:
    to_b: dict[int, list[int]] = {}
    to_a: dict[int, list[int]] = {}
    for la, lb in pair.shared_lines:
        to_b.setdefault(la, []).append(lb)
        to_a.setdefault(lb, []).append(la)
    return {**summary_row(pair, number), "shared": pair.shared,
            "a": _side(pair.a, pair.weight_a, to_b), "b": _side(pair.b, pair.weight_b, to_a)}


def summary_row(p: Pair, number: int) -> dict:
    """One pair as the tables list it: what it is, its score and where the class puts it,
    and what share of each file it shares (all shared code, and code few others have)."""
    return {"number": number, "score": f"{p.score:.2f}", "verdict": verdict(p),
            "is_copy": bool(p.kind), "stands_out": p.stands_out,
            "percentile": _percentile(p.percentile), "cluster": p.cluster or "",
            "a_student": p.a.student, "a_path": p.a.path, "b_student": p.b.student,
            "b_path": p.b.path, "share_a": _percent(p.share_a), "share_b": _percent(p.share_b),
            "rare_a": _percent(p.rare_share_a), "rare_b": _percent(p.rare_share_b)}


def summary_rows(comparison: Comparison, top: int) -> list[dict]:
    """The top pairs as report.html lists them."""
    return [summary_row(p, i) for i, p in enumerate(comparison.pairs[:top], 1)]


def signal_view(signal) -> dict | None:
    """The second signal as the pages show it (names and cases only)."""
    if signal is None:
        return None
    groups, pairs, limit = signal
    return {"limit": limit, "pairs": [{"a": p.a, "b": p.b, "count": len(p.cases),
                                       "cases": [f"{g.question}: {g.case}" for g in p.cases]}
                                      for p in pairs[:50]],
            "more": max(0, len(pairs) - 50), "groups": len(groups)}


def similarity_html(title: str, assignment: str, comparison: Comparison, top: int,
                    signal=None) -> str:
    env = page_environment()
    return env.get_template("similarity.html.j2").render(
        title=title, assignment=assignment, n=len(comparison.sources),
        candidates=comparison.candidates, generated=time.strftime("%Y-%m-%d %H:%M"),
        pairs=[pair_view(p, i) for i, p in enumerate(comparison.pairs[:top], 1)],
        listed=len(comparison.pairs), skipped=comparison.skipped, k=K, window=WINDOW,
        min_score=f"{comparison.min_score:g}", baseline=baseline_text(comparison),
        clusters=comparison.clusters, signal=signal_view(signal),
        copies=sum(1 for p in comparison.pairs if p.kind))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_similarity(out: Path, assignment, comparison: Comparison, template: list[Path],
                     top: int, signal=None) -> dict[str, Path]:
    """Write similarity.json and similarity.html in `out`; their paths. `signal`: the shared
    rare wrong outputs (`shared_wrong_outputs`), when the class was graded."""
    out.mkdir(parents=True, exist_ok=True)
    data = similarity_json(assignment.name, comparison, [p.name for p in template], signal)
    _write_atomic(out / "similarity.json", json.dumps(data, indent=1))
    _write_atomic(out / "similarity.html",
                  similarity_html(assignment.title, assignment.name, comparison, top, signal))
    return {"json": out / "similarity.json", "html": out / "similarity.html"}


def class_section(out: Path, assignment, graded, top: int = 20) -> dict:
    """For `grade --similarity`: compare the graded class (each file as graded, named as in
    grades.json), with the second signal of its graded hidden cases, write similarity.json and
    .html beside the grades, and return what report.html's section shows. Reads the files
    again; touches no result."""
    from .shared_wrong_outputs import shared_wrong_outputs
    from .similarity import compare_students, template_files

    template = template_files(assignment)
    comparison = compare_students([g.student for g in graded], template,
                                  min_score=DEFAULT_MIN_SCORE, max_pairs=DEFAULT_MAX_PAIRS,
                                  shown={i: g.result.path for i, g in enumerate(graded)})
    signal = shared_wrong_outputs([g.result for g in graded])
    write_similarity(out, assignment, comparison, template, top, signal)
    return {"pairs": summary_rows(comparison, top), "baseline": baseline_text(comparison),
            "clusters": comparison.clusters, "signal": signal_view(signal)}
