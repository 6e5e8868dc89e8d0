"""Taking each written answer's text from a submission, trusting it only to be text.

Where an answer comes from, first found wins:

* a notebook's Markdown cell tagged with the question's id (otter's manual questions);
* the module-level string of that name, as the student's module holds it once imported: the
  worker reports it (the first MAX_CHARS characters and the length, `sandbox.worker`), or the
  student's own process when a student runs `check`;
* the same string read from the source with `ast` (never run), when the module could not be
  imported (an import that raised or ran out of time), so a crash in the code does not cost the
  written answers. A source that does not parse (a syntax error anywhere, a notebook cell that
  does not compile) is read all the same: each top-level statement the parser stops at is left
  out, and the rest parsed again (`tolerant_parse`), so an answer is lost only when its own
  statement is broken.

Texts are cut at MAX_CHARS characters (the student is told), lone surrogates become U+FFFD
(they cannot be stored or shown), line ends are `\\n`, and common indentation and surrounding
blank space go. Nothing here renders a text: each output escapes it for where it goes.
"""
from __future__ import annotations

import ast
import re
import textwrap
from typing import Iterable

from ..model.written_answer import Status, WrittenAnswer
from ..model.written_spec import WrittenQuestion

MAX_CHARS = 20_000
# What the generated notebook's answer cells hold until the student writes (otter's words).
PLACEHOLDERS = ("_Type your answer here, replacing this text._",
                "Type your answer here, replacing this text.")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """A student's text as stored and compared: no lone surrogates, `\\n` line ends, no common
    indentation, no blank space around it."""
    text = _SURROGATE.sub("\ufffd", text).replace("\r\n", "\n").replace("\r", "\n")
    return textwrap.dedent(text).strip()


def is_blank(text: str) -> bool:
    stripped = text.strip()
    return not stripped or stripped in PLACEHOLDERS


# ------------------------------------------------------------------ the sources of a text

def from_source(source: str, ids: Iterable[str]) -> dict[str, str]:
    """{id: text} of the module-level assignments `ID = "..."` of a Python source, read with
    `ast` (the last one of each name wins, as it would when run). A value that is not plain
    text (a call, a name) is left out; a statement that does not parse is left out, the others
    read (`tolerant_parse`)."""
    wanted = set(ids)
    if not wanted or not any(name in source for name in wanted):
        return {}
    tree = tolerant_parse(source)
    if tree is None:
        return {}
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in wanted:
                text = _literal_text(value)
                if text is not None:
                    found[target.id] = text
    return found


# Reading a source that does not parse: at most this many broken statements are left out, and
# at most this many characters parsed in all (beyond twice the source's own length), so that a
# file of thousands of broken lines costs a fraction of a second, not minutes.
MAX_LEFT_OUT = 200
PARSE_BUDGET = 1_000_000
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b|[)\]}]")


def _starts_statement(line: str) -> bool:
    """Whether a line starts a top-level statement: it begins at column 0 with neither a
    comment, a closing bracket nor the continuation of a compound statement."""
    return bool(line) and line[0] not in " \t\r\n\f#" and not _CONTINUES.match(line)


def tolerant_parse(source: str) -> ast.Module | None:
    """The source's syntax tree; when it does not parse, the tree of what is left once each
    top-level statement the parser stops at (from its first line at column 0 to the next) is
    blanked out, line numbers kept. None when nothing can be made to parse within the bounds
    above."""
    try:
        return ast.parse(source)
    except SyntaxError:
        pass
    except (ValueError, RecursionError, MemoryError):
        return None
    lines = source.splitlines(keepends=True)
    budget = PARSE_BUDGET + 2 * len(source)
    for _ in range(MAX_LEFT_OUT):
        text = "".join(lines)
        budget -= len(text)
        if budget < 0:
            return None
        try:
            return ast.parse(text)
        except SyntaxError as e:
            where = (e.lineno or len(lines)) - 1
        except (ValueError, RecursionError, MemoryError):
            return None
        where = min(max(where, 0), len(lines) - 1)
        while where > 0 and not lines[where].strip():
            where -= 1
        start = where
        while start > 0 and not _starts_statement(lines[start]):
            start -= 1
        end = where + 1
        while end < len(lines) and not _starts_statement(lines[end]):
            end += 1
        if not any(line.strip() for line in lines[start:end]):
            return None
        lines[start:end] = ["\n"] * (end - start)
    return None


def _literal_text(node: ast.expr, depth: int = 0) -> str | None:
    """The text of a string literal, of literals joined with `+`, or of an f-string without
    fields; None for anything else."""
    if depth > 50:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant)
                                               for v in node.values):
        return "".join(str(v.value) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_text(node.left, depth + 1), _literal_text(node.right, depth + 1)
        if left is not None and right is not None and len(left) + len(right) < 10 * MAX_CHARS:
            return left + right
    return None


def from_markdown(cells: Iterable[tuple[list[str], str, int]], ids: Iterable[str]
                  ) -> dict[str, dict]:
    """{id: {"text", "length"}} of a notebook's Markdown cells tagged with a question's id
    (`Submission.tagged_markdown`; several cells with one tag are joined in their order)."""
    wanted = set(ids)
    parts: dict[str, list[str]] = {}
    lengths: dict[str, int] = {}
    for tags, text, length in cells:
        for tag in tags:
            if tag in wanted:
                parts.setdefault(tag, []).append(text)
                lengths[tag] = lengths.get(tag, 0) + length
    return {qid: {"text": "\n\n".join(texts), "length": lengths[qid]}
            for qid, texts in parts.items()}


def from_module(namespace: dict, ids: Iterable[str]) -> dict[str, dict]:
    """What the worker reports (`sandbox.worker.describe_texts`), from a namespace in this
    process: the student's own `check`, which runs their code here anyway."""
    out = {}
    for qid in ids:
        if qid in namespace:
            value = namespace[qid]
            out[qid] = {"text": str.__getitem__(value, slice(0, MAX_CHARS)),
                        "length": str.__len__(value)} if type(value) is str \
                else {"type": type(value).__name__[:60]}   # noqa: E721
    return out


# ------------------------------------------------------------------ into the result

def answers(questions: list[WrittenQuestion], *, markdown: dict[str, dict] | None = None,
            reported: dict[str, dict] | None = None, source: str | None = None
            ) -> dict[str, WrittenAnswer]:
    """Each written question's answer, from the first source that holds text for it (module
    docstring): `markdown` from `from_markdown`, `reported` the worker's report (or
    `from_module`'s), `source` the Python source to read when nothing was reported."""
    markdown, reported = markdown or {}, reported or {}
    ids = [q.id for q in questions]
    static = from_source(source, [i for i in ids if "text" not in reported.get(i, {})]) \
        if source is not None else {}
    out = {}
    for q in questions:
        notes: list[str] = []
        found = [markdown.get(q.id), reported.get(q.id)]
        if q.id in static:
            found.append({"text": static[q.id], "length": len(static[q.id])})
        texts = [f for f in found if isinstance(f, dict) and "text" in f]
        chosen = next((f for f in texts if not is_blank(f["text"][:MAX_CHARS])), None)
        other = reported.get(q.id)
        if chosen is None and isinstance(other, dict) and "type" in other:
            notes.append(f"note: `{q.id}` holds a value of type {other['type']}, not text: "
                         "write your answer between quotes")
        if chosen is None:
            out[q.id] = WrittenAnswer(q.id, q.points, notes=notes)
            continue
        if chosen["length"] > MAX_CHARS:
            notes.append(f"note: your answer to {q.id} has {chosen['length']:,} characters; the "
                         f"first {MAX_CHARS:,} were kept for the grader")
        text = clean(chosen["text"][:MAX_CHARS])
        out[q.id] = WrittenAnswer(q.id, q.points, text, max(chosen["length"], len(text)),
                                  Status.PENDING, None, notes=notes)
    return out


def unanswered(questions: list[WrittenQuestion]) -> dict[str, WrittenAnswer]:
    """Every question without an answer (a row with nothing to read: no file, say)."""
    return {q.id: WrittenAnswer(q.id, q.points) for q in questions}


def words(text: str) -> int:
    return len(text.split())


def summary(answer: WrittenAnswer) -> str:
    """One line on an answer for the student's terminal (`check`) and CI logs."""
    if answer.status == Status.NOT_ATTEMPTED and answer.score == 0 and not answer.grader:
        return "not answered yet"
    n = words(answer.answer)
    said = f"answered ({n} word{'s' if n != 1 else ''})"
    if answer.status == Status.GRADED:
        return f"{said}; graded by hand"
    if answer.status == Status.REGRADE:
        return f"{said}; changed since it was graded, so it is graded again by hand"
    return f"{said}; graded by hand after you submit"

