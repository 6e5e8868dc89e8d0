"""Files a class grading run writes: grades.csv, grades.json, feedback/*.md and report.html."""
from __future__ import annotations

import collections
import csv
import io
import json
import os
import re
import statistics
import time
from pathlib import Path

from ..model.assignment import Assignment
from ..feedback.render import render_question
from ..feedback.totals import Totals, out_of
from ..feedback.contract import results_json
from ..model.results import SubmissionResult, mistake_counts
from ..model.safetext import csv_cell, markdown_inline, markdown_text
from ..model.status import PROBLEM_STATUSES, CaseStatus, QuestionStatus, kind_words
from .pages import page_environment
from ..written import render as written_render
from .standing import Standing, plain_standing, statistics_rule


# The CSV status of a row flagged for review on doubts alone (no points taken).
REVIEW_STATUS = "review"


def has_hard_evidence(result: SubmissionResult) -> bool:
    """Whether the row's integrity findings include hard evidence (not only review doubts)."""
    return any(f.get("kind") != "review" for f in result.integrity)


def safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "student"
    return cleaned[:80]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


STUB_TEXT = "Not implemented yet: the function still raises NotImplementedError."


def feedback_markdown(result: SubmissionResult, title: str,
                      standing: Standing | None = None, *, total_label: str = "Total") -> str:
    """A student's feedback file. Text from the student (their name, messages quoting their
    code or exceptions, file names in notes) is escaped: it shows as written and cannot add
    headings, totals, links or HTML. The content comes from the one case renderer; the total
    is the one that counts (`standing`: adjusted under a late policy)."""
    md, text = markdown_inline, markdown_text    # `text`: the engine's texts, code as code
    standing = standing or plain_standing(result)
    lines = [f"# {title}: feedback for {md(result.student or result.path)}", "",
             f"**{total_label}: {standing.total_text()}**", ""]
    if result.error:
        lines += [f"> {text(result.error)}", ""]
    for note in result.notes:
        lines += [f"_{text(note)}_", ""]
    for q in result.questions.values():
        view = render_question(q, said=result.error)   # the problem above, said once
        lines.append(f"## {q.id}: {view.score:g} / {view.max_score:g} ({view.status})")
        lines.append("")
        if view.decision:
            lines += [f"**{md(view.decision)}**", ""]
        if view.summarised:
            if view.is_stub:
                lines += [STUB_TEXT, ""]
            elif view.todo:
                lines += [f"- {text(m)}" for m in view.todo] + [""]
            continue
        for c in view.cases:
            if c.passed:
                lines.append(f"- ✅ {c.tag} *{md(c.name)}*")
                continue
            lines.append(f"- ❌ {c.tag} *{md(c.name)}*: {text(c.first_line)}")
            lines += c.tail_lines("  - ", "  - 💡 ", "  - ", shown=md, hint_shown=text)
        for n in view.notes:
            lines.append(f"- {text(n)}")
        lines.append("")
    lines += written_render.feedback_markdown(result.written)
    return "\n".join(lines)


def feedback_html(result: SubmissionResult, title: str, standing: Standing | None = None,
                  markdown_file: str = "") -> str:
    """The feedback file as a page a browser shows (report.html links it): the same content
    as `feedback_markdown`, escaped by the template, with text marks instead of emoji."""
    standing = standing or plain_standing(result)
    return page_environment().get_template("feedback.html.j2").render(
        title=title, student=result.student or result.path, total=standing.total_text(),
        error=result.error, notes=result.notes, stub_text=STUB_TEXT,
        questions=[render_question(q, said=result.error) for q in result.questions.values()],
        written=written_render.feedback_views(result.written), markdown_file=markdown_file)


def _plot(values: list[float], maximum: float, title: str, xlabel: str):
    """A distribution of scores as inline SVG (`pictures.draw.histogram`), safe in the page."""
    from markupsafe import Markup

    from ..pictures.draw import histogram

    return Markup(histogram(values, maximum, title, xlabel))


def _named_mistakes(assignment: Assignment, results: list[SubmissionResult],
                    described: dict | None = None) -> dict:
    """{question: [(name, hint, count)]}: the named mistakes per question, by their names
    (none when no catalogue named any)."""
    try:
        counts = mistake_counts(results)
        if counts and described is None:
            from ..diagnose import describe_mistakes   # loads torch: only when there are any

            described = describe_mistakes(assignment)
        described = described or {}
    except Exception:  # noqa: BLE001 - a report must not fail over an optional section
        return {}
    return {q: [(described.get(m, {}).get("name") or m, described.get(m, {}).get("hint", ""), n)
                for m, n in per.items()] for q, per in counts.items()}


def _descriptions(out: Path, assignment: Assignment) -> dict | None:
    """The mistakes' names and hints a grading process of this run recorded in its cache
    (`batch.descriptions_file`), None when there are none (the report then loads them)."""
    from .batch import descriptions_file

    try:
        data = json.loads(descriptions_file(out / ".cache", assignment).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _problem(qid: str, q) -> str:
    """A question's problem for the report; tampering and the grader's own failures say what
    happened (their message), since the instructor has to act on them."""
    text = f"{qid}: {q.status}"
    if q.status in (QuestionStatus.INTEGRITY, QuestionStatus.INTERNAL_ERROR):
        case = next((c for c in q.cases if c.status in (CaseStatus.INTEGRITY,
                                                         CaseStatus.INTERNAL_ERROR)), None)
        if case is not None and case.message:
            text += f" ({case.message})"
    return text


def html_report(assignment: Assignment, results: list[SubmissionResult],
                feedback_files: list[str], flags: list[dict],
                similarity: dict | None = None, standings: list[Standing] | None = None,
                late_policy: str | None = None, decisions: list[dict] | None = None,
                described: dict | None = None) -> str:
    """`similarity`: what `similarity_report.class_section` gives (`grade --similarity`),
    shown in its own section; None leaves the section out. `feedback_files`: the feedback pages linked (.html; the .md
    beside each). `standings`: the total that counts per result, `late_policy` the policy's
    words when one applies. The class statistics use the totals that count, and leave the
    missing students out (`standing.statistics_rule` says so on the page)."""
    standings = standings or [plain_standing(r) for r in results]
    handed_in = [r for r, st in zip(results, standings) if not st.missing]
    totals = [st.counted for st in standings if not st.missing]
    max_total = max((r.max_score for r in results), default=0.0)
    mistakes = _named_mistakes(assignment, handed_in, described)
    questions = []
    for q in assignment.questions:
        per = [r.questions[q.id] for r in handed_in if q.id in r.questions]
        if not per:
            continue
        qmax = per[0].max_score
        kinds = collections.Counter()
        for qr in per:
            kinds.update({c.kind or c.status for c in qr.cases
                          if c.status != CaseStatus.PASSED})
        statuses = collections.Counter(qr.status for qr in per)
        questions.append({
            "id": q.id, "max": f"{qmax:g}", "mean": statistics.mean(qr.score for qr in per),
            "full": sum(qr.status == QuestionStatus.PASSED for qr in per),
            "statuses": sorted(statuses.items(), key=lambda kv: -kv[1]),
            "kinds": [(kind_words(k), n) for k, n in kinds.most_common(4)],
            "mistakes": sorted(mistakes.get(q.id, []), key=lambda m: -m[2])[:5],
            "plot": _plot([qr.score for qr in per], qmax, q.id, "score"),
        })
    problems, missing = [], []
    for r in results:
        if r.missing:
            missing.append({"student": r.student or r.path, "why": r.error or ""})
            continue
        bad = [_problem(qid, q) for qid, q in r.questions.items()
               if q.status in PROBLEM_STATUSES]
        flagged = [n for n in r.notes if n.startswith("integrity:")]
        if r.error or bad or flagged:
            what = flagged + [w for w in (r.error or "; ".join(bad),) if w]
            problems.append({"student": r.student or r.path, "path": r.path,
                             "what": "; ".join(what)})
    students = []
    for r, fb, st in zip(results, feedback_files, standings):
        students.append({
            "name": r.student or r.path, "total": f"{r.score:g}", "max": f"{r.max_score:g}",
            "feedback": fb, "markdown": str(Path(fb).with_suffix(".md")),
            "missing": st.missing, "days_late": "" if st.missing else st.days_late,
            "counted": f"{st.counted:g}",
            "written": _written_cell(r),
            "cells": [{"score": f"{r.questions[q['id']].score:g}",
                       "status": r.questions[q["id"]].status,
                       "override": (r.questions[q["id"]].override or {}).get("reason")}
                      if q["id"] in r.questions else {"score": "-", "status": ""}
                      for q in questions]})
    return page_environment().get_template("report.html.j2").render(
        title=assignment.title, assignment=assignment.name, n=len(results),
        n_handed_in=len(handed_in), missing=missing, late_policy=late_policy,
        missing_status=QuestionStatus.MISSING,
        statistics_rule=statistics_rule(late_policy, len(missing)),
        generated=time.strftime("%Y-%m-%d %H:%M"),
        sandbox=next((r.sandbox for r in results if r.sandbox), None),
        mean=statistics.mean(totals) if totals else 0.0,
        median=statistics.median(totals) if totals else 0.0, max_total=max_total,
        full=sum(st.counted == st.max_score and st.max_score > 0 for st in standings
                 if not st.missing),
        total_plot=_plot(totals, max_total,
                             "adjusted totals" if late_policy else "total scores",
                             "adjusted total" if late_policy else "total"),
        questions=questions, problems=problems, students=students, flags=flags,
        out_of=_out_of(assignment, handed_in or results),
        similarity=similarity, decisions=decisions or [],
        written=written_render.report_section(assignment.written, handed_in))


def _written_cell(r: SubmissionResult) -> str:
    """A student's written points in the report's table, as the terminal's table shows them
    (`wait 0/10`; "" without written questions)."""
    return Totals.of(r).written_cell()


def _out_of(assignment: Assignment, results: list[SubmissionResult]) -> str:
    """What the totals are out of, and what waits for a grader (`totals`' words)."""
    top = max(results, key=lambda r: r.max_score, default=None)
    if top is None:
        return ""
    t = Totals.of(top)
    text = f"Totals are out of {out_of(t.autograded_max, t.written_max)}."
    waiting = sum(Totals.of(r).waiting for r in results)
    if waiting:
        text += (f" Written answers worth {waiting:g} points in all wait for a grader "
                 "(`autograder review`): until graded they count 0, in every total and "
                 "statistic here.")
    return text


def write_reports(out: Path, assignment: Assignment, results: list[SubmissionResult],
                  flags: list[dict] | None = None,
                  extra: list[dict] | None = None,
                  similarity: dict | None = None,
                  standings: list[Standing] | None = None,
                  late_policy: str | None = None, decisions: list[dict] | None = None,
                  file_names: list[str | None] | None = None) -> dict[str, Path]:
    """`extra`, one dict per result: columns added at the end of grades.csv and fields of the
    result's JSON row (roster identifier, due date); its "status" replaces the row's status.
    `similarity` only adds a section to report.html: grades.csv and grades.json never see it.
    `standings` and `late_policy` (see html_report): the totals the feedback files and the
    report show. `decisions`: the extensions and overrides report.html lists; `file_names`:
    each row's feedback file name (a roster's username), None to name it after the row."""
    out.mkdir(parents=True, exist_ok=True)
    standings = standings or [plain_standing(r) for r in results]
    fb_dir = out / "feedback"
    fb_dir.mkdir(exist_ok=True)
    qids = [q.id for q in assignment.questions]
    wids = [q.id for q in assignment.written]   # written: empty while waiting for a grader
    feedback_files, used = [], set()
    for i, (r, standing) in enumerate(zip(results, standings)):
        own = file_names[i] if file_names else None
        name = safe_name(own or r.student or Path(r.path).stem)
        base, i = name, 2
        while name in used:
            name, i = f"{base}-{i}", i + 1
        used.add(name)
        _write_atomic(fb_dir / f"{name}.md", feedback_markdown(r, assignment.title, standing))
        _write_atomic(fb_dir / f"{name}.html",
                      feedback_html(r, assignment.title, standing, f"{name}.md"))
        feedback_files.append(f"feedback/{name}.html")

    buf = io.StringIO()
    writer = csv.writer(buf)
    extra_columns = [k for k in (extra[0] if extra else {}) if k != "status"]
    writer.writerow(["student", "file", *qids, *wids, "total", "max_score", "status", "error",
                     *extra_columns])
    for i, r in enumerate(results):
        more = extra[i] if extra else {}
        statuses = {q.status for q in r.questions.values()}
        overall = QuestionStatus.MISSING if r.missing else \
            QuestionStatus.INTEGRITY if has_hard_evidence(r) else \
            QuestionStatus.ERROR if r.error else \
            next((s for s in PROBLEM_STATUSES if s in statuses),
                 REVIEW_STATUS if r.integrity else "graded")
        overall = more.get("status") or overall
        # Text cells are neutralised (no cell can start a formula); scores stay numbers.
        writer.writerow([csv_cell(r.student or ""), csv_cell(r.path),
                         *[f"{r.questions[q].score:g}" if q in r.questions else "" for q in qids],
                         *[f"{r.written[w].score:g}" if w in r.written and
                           r.written[w].score is not None else "" for w in wids],
                         f"{r.score:g}", f"{r.max_score:g}", csv_cell(str(overall)),
                         csv_cell(r.error or ""), *[csv_cell(more.get(k)) for k in extra_columns]])
    _write_atomic(out / "grades.csv", buf.getvalue())
    data = results_json(assignment.name, results)
    for row, more in zip(data["submissions"], extra or []):
        row.update(more)
    if flags:
        data["flags"] = flags
    text = json.dumps(data, indent=2)
    _write_atomic(out / "grades.json", text)
    _write_atomic(out / "report.html", html_report(assignment, results, feedback_files,
                                                   flags or [], similarity, standings,
                                                   late_policy, decisions,
                                                   _descriptions(out, assignment)))
    return {"csv": out / "grades.csv", "json": out / "grades.json", "results": data,
            "results_text": text,
            "html": out / "report.html", "feedback": fb_dir,
            "feedback_files": [out / Path(f).with_suffix(".md") for f in feedback_files]}
