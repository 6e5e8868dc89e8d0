"""`autograder lint` on written questions (`written.toml`, model/written_spec.py).

Checked: the file is valid TOML with known keys; every question has an id that is a Python
name used once (not another question's, a function's or an answer variable's), a prompt and
positive points; its rubric items have distinct ids, a description and numeric points, and
together can reach the question's points; the template holds each answer as an empty string
under a comment that states the prompt; the model answers name known questions.
"""
from __future__ import annotations

import ast
import keyword
import re
import tomllib
from pathlib import Path

from ..model.written_spec import ITEM_KEYS, QUESTION_KEYS, RUBRIC_ELSEWHERE, written_file

_KEY_LINE = re.compile(r"^\s*(\[\[question(\.rubric)?\]\]|([A-Za-z_]+)\s*=)")


def toml_finding(path: Path, e: tomllib.TOMLDecodeError, error):
    """A TOML syntax error as a finding at its line."""
    m = re.search(r"line (\d+)", str(e))
    return error(path, int(m.group(1)) if m else 1, f"not valid TOML: {e}", "correct the syntax")


def _lines(text: str) -> tuple[list[int], list[list[int]], dict]:
    """(line of each [[question]], lines of each question's [[question.rubric]], and the line
    of each key as {(question index, item index or -1, key): line})."""
    questions: list[int] = []
    items: list[list[int]] = []
    keys: dict = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _KEY_LINE.match(line)
        if not m:
            continue
        if m.group(1) == "[[question]]":
            questions.append(n)
            items.append([])
        elif m.group(2):
            if items:
                items[-1].append(n)
        elif questions:
            keys.setdefault((len(questions) - 1, len(items[-1]) - 1, m.group(3)), n)
    return questions, items, keys


def lint_written(root: Path, config: dict, template: Path | None, taken: dict[str, str],
                 error, *, hidden_material: bool = True) -> list:
    """Findings for the written questions of the assignment in `root`. `taken`: names already
    used, {name: what uses it}; `error(file, line, message, fix)` makes a finding. Without
    `hidden_material` (a student's check) the model answers are not looked for; a bundle's
    written.toml without rubrics (`RUBRIC_ELSEWHERE`) has none to check."""
    path = written_file(root)
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return [toml_finding(path, e, error)]
    found = []
    q_lines, item_lines, key_lines = _lines(text)
    public = data.get("rubric") == RUBRIC_ELSEWHERE
    for key in data:
        if key == "rubric" and public:
            continue
        if key != "question":
            found.append(error(path, 1, f"unknown key or table `{key}`",
                               "write each question as a [[question]] table"))
    raw = data.get("question", [])
    if not isinstance(raw, list):
        return found + [error(path, 1, "[question] must be [[question]]",
                              "write each question as a [[question]] table")]
    template_answers = _template_answers(template) if template else None
    seen: dict[str, str] = dict(taken)
    for i, q in enumerate(raw):
        line = q_lines[i] if i < len(q_lines) else 1

        def at(key: str, item: int = -1, default: int = line) -> int:
            return key_lines.get((i, item, key), default)
        if not isinstance(q, dict):
            continue
        for key in q:
            if key not in QUESTION_KEYS:
                found.append(error(path, at(key), f"unknown key `{key}` in a written question",
                                   f"use one of {', '.join(sorted(QUESTION_KEYS))}"))
        qid = q.get("id")
        if not isinstance(qid, str) or not qid.isidentifier() or keyword.iskeyword(qid):
            found.append(error(path, at("id"), f"written question id {qid!r} is not a Python "
                               "name", "use letters, digits and underscores (the id names the "
                               "string that holds the answer)"))
            continue
        if qid in seen:
            found.append(error(path, at("id"), f"duplicate id {qid!r}: it already names "
                               f"{seen[qid]}", "give each question its own id"))
        seen[qid] = "a written question"
        prompt = q.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            found.append(error(path, at("prompt"), f"{qid}: the prompt is empty",
                               "write the question the student answers"))
        points = q.get("points")
        if not _number(points) or points <= 0:
            found.append(error(path, at("points"), f"{qid}: points must be a positive number",
                               "give the question its points, e.g. `points = 3`"))
            points = None
        if not public:
            found += _lint_rubric(path, qid, q.get("rubric", []), points,
                                  item_lines[i] if i < len(item_lines) else [], at, error)
        if template_answers is not None and isinstance(prompt, str):
            found += _lint_template(template, template_answers, qid, prompt, error)
    if hidden_material:
        found += _lint_models(root, config, {q.get("id") for q in raw if isinstance(q, dict)},
                              error)
    return found


def _lint_rubric(path: Path, qid: str, items, points, lines: list[int], at, error) -> list:
    found = []
    if not isinstance(items, list):
        return [error(path, at("rubric"), f"{qid}: the rubric must be [[question.rubric]] "
                      "tables", "write each item as a [[question.rubric]] table")]
    ids: set[str] = set()
    for j, item in enumerate(items):
        line = lines[j] if j < len(lines) else at("rubric")
        if not isinstance(item, dict):
            continue
        for key in item:
            if key not in ITEM_KEYS:
                found.append(error(path, at(key, j, line), f"{qid}: unknown key `{key}` in a "
                                   "rubric item", f"use one of {', '.join(sorted(ITEM_KEYS))}"))
        iid = item.get("id")
        if not isinstance(iid, str) or not iid.strip():
            found.append(error(path, line, f"{qid}: a rubric item has no id",
                               "add `id = \"...\"` (what the CSV and the audit log name)"))
        elif iid in ids or ";" in iid:
            found.append(error(path, at("id", j, line), f"{qid}: rubric item id {iid!r} is "
                               + ("used twice" if iid in ids else "not allowed (`;` separates "
                                  "items in the CSV)"), "give each item its own id"))
        if isinstance(iid, str):
            ids.add(iid)
        if not isinstance(item.get("description"), str) or not item["description"].strip():
            found.append(error(path, at("description", j, line), f"{qid}: rubric item {iid!r} "
                               "has no description", "say what the grader looks for"))
        if not _number(item.get("points")):
            found.append(error(path, at("points", j, line), f"{qid}: rubric item {iid!r} needs "
                               "numeric points (negative for a deduction)",
                               "add `points = 1` (or -1)"))
    if points is not None:
        reach = sum(i["points"] for i in items if isinstance(i, dict) and _number(i.get("points"))
                    and i["points"] > 0)
        if reach < points:
            found.append(error(path, at("points"), f"{qid}: its rubric items reach {reach:g} of "
                               f"its {points:g} points: no answer could get full marks by the "
                               "rubric", "add or raise positive items, or lower the points"))
    return found


def _template_answers(template: Path) -> dict[str, tuple[int, str, str]] | None:
    """{name: (line, value, comment above)} of the template's module-level string
    assignments; None when it does not parse (lint says so elsewhere)."""
    try:
        source = template.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError):
        return None
    lines = source.splitlines()
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            comment, n = [], node.lineno - 1
            while n > 0 and lines[n - 1].lstrip().startswith("#"):
                comment.insert(0, lines[n - 1].lstrip()[1:].strip())
                n -= 1
            out[node.targets[0].id] = (node.lineno, value, " ".join(comment))
    return out


def _words(text: str) -> str:
    return " ".join(text.split())


def _lint_template(template: Path, answers: dict, qid: str, prompt: str, error) -> list:
    if qid not in answers:
        return [error(template, 1, f"the template has no `{qid} = \"\"` for the written "
                      f"question {qid!r}", f"add the prompt as a comment and `{qid} = \"\"\"` "
                      "under it (the student writes the answer there)")]
    line, value, comment = answers[qid]
    found = []
    if not isinstance(value, str) or value.strip():
        found.append(error(template, line, f"`{qid}` must be an empty string in the template",
                           f"write `{qid} = \"\"\"` and `\"\"\"` on the next line"))
    if _words(prompt) not in _words(comment):
        found.append(error(template, line, f"the comment above `{qid}` does not state the "
                           "prompt of written.toml", "copy the prompt into the comment lines "
                           "right above the string"))
    return found


def _lint_models(root: Path, config: dict, ids: set, error) -> list:
    from ..model.assignment import resolve_config_path

    rel = config.get("written_answers")
    if not isinstance(rel, str):
        return []
    path = resolve_config_path(root, root.parent.parent, rel)
    if not path.is_file():
        return [error(root / "assignment.toml", 1, f"written_answers {rel!r} not found",
                      "give the model answers' path, relative to this folder or the project")]
    try:
        models = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        return [toml_finding(path, e, error)]
    return [error(path, 1, f"model answer for unknown written question {k!r}",
                  "use the id of a question of written.toml")
            for k, v in models.items() if k not in ids or not isinstance(v, str)]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
