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

from ..safetext import visible
from .pages import page_environment
from .similarity import K, WINDOW, Comparison, Pair, Source

MAX_SHOWN_LINES = 2000     # per side of a pair in the HTML
MAX_LINE_CHARS = 300
DEFAULT_MIN_SCORE = 0.2    # pairs below it are left out of similarity.json
DEFAULT_MAX_PAIRS = 1000
STRONG = 0.5               # a line shared through a fingerprint at least this rare is marked


def similarity_json(assignment: str, comparison: Comparison,
                    template_names: list[str]) -> dict:
    return {
        "assignment": assignment,
        "submissions": len(comparison.sources),
        "candidates": comparison.candidates,
        "min_score": comparison.min_score,
        "method": {"k": K, "window": WINDOW, "base": template_names},
        "skipped": [{"student": s.student, "path": s.path, "why": s.why}
                    for s in comparison.skipped],
        "pairs": [{"a": p.a.path, "b": p.b.path, "score": p.score,
                   "a_student": p.a.student, "b_student": p.b.student,
                   "shared_fingerprints": p.shared,
                   "shared_lines": [list(x) for x in p.shared_lines]}
                  for p in comparison.pairs],
    }


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
    return {"number": number, "score": f"{pair.score:.2f}", "shared": pair.shared,
            "lines_a": len(to_b), "lines_b": len(to_a),
            "a": _side(pair.a, pair.weight_a, to_b), "b": _side(pair.b, pair.weight_b, to_a)}


def summary_rows(comparison: Comparison, top: int) -> list[dict]:
    """The top pairs as report.html lists them."""
    return [{"number": i, "score": f"{p.score:.2f}", "a": p.a.student, "a_path": p.a.path,
             "b": p.b.student, "b_path": p.b.path,
             "lines": len({la for la, _ in p.shared_lines})}
            for i, p in enumerate(comparison.pairs[:top], 1)]


def similarity_html(title: str, assignment: str, comparison: Comparison, top: int) -> str:
    env = page_environment()
    return env.get_template("similarity.html.j2").render(
        title=title, assignment=assignment, n=len(comparison.sources),
        candidates=comparison.candidates, generated=time.strftime("%Y-%m-%d %H:%M"),
        pairs=[pair_view(p, i) for i, p in enumerate(comparison.pairs[:top], 1)],
        listed=len(comparison.pairs), skipped=comparison.skipped, k=K, window=WINDOW,
        min_score=f"{comparison.min_score:g}")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_similarity(out: Path, assignment, comparison: Comparison, template: list[Path],
                     top: int) -> dict[str, Path]:
    """Write similarity.json and similarity.html in `out`; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    data = similarity_json(assignment.name, comparison, [p.name for p in template])
    _write_atomic(out / "similarity.json", json.dumps(data, indent=1))
    _write_atomic(out / "similarity.html",
                  similarity_html(assignment.title, assignment.name, comparison, top))
    return {"json": out / "similarity.json", "html": out / "similarity.html"}


def class_section(out: Path, assignment, graded, top: int = 20) -> list[dict]:
    """For `grade --similarity`: compare the graded class (each file as graded, named as in
    grades.json), write similarity.json and .html beside the grades, and return the rows of
    report.html's section. Reads the files again; touches no result."""
    from .similarity import compare_students, template_files

    template = template_files(assignment)
    comparison = compare_students([g.student for g in graded], template,
                                  min_score=DEFAULT_MIN_SCORE, max_pairs=DEFAULT_MAX_PAIRS,
                                  shown={i: g.result.path for i, g in enumerate(graded)})
    write_similarity(out, assignment, comparison, template, top)
    return summary_rows(comparison, top)
