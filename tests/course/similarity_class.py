"""A class for the similarity tests, built from the corpora: independent solutions, planted
copies in the usual disguises, and unattempted stubs."""
from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import shutil
import tokenize
from pathlib import Path

from helpers import ROOT, SUBMISSIONS

TEMPLATE = ROOT / "student_template" / "attention.py"
API = {"softmax", "causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads",
       "multi_head_attention", "layer_norm", "transformer_block"}
KEEP = API | {"torch", "math", "F", "nn", "np", "functional"} | set(dir(builtins))


def rename(source: str) -> str:
    """Every name the student chose renamed (parameters, locals, helpers); the API's names,
    modules and attributes kept, so the program still works."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    # Keyword-argument names belong to the functions called (dim=, keepdim=): kept.
    keywords = {t.string for t, after in zip(tokens, tokens[1:])
                if t.type == tokenize.NAME and after.string == "="}
    mapping: dict[str, str] = {}
    out, previous = [], None
    for tok in tokens:
        text = tok.string
        if tok.type == tokenize.NAME and not keyword.iskeyword(text) and text not in KEEP \
                and text not in keywords and previous != ".":
            text = mapping.setdefault(text, f"renamed_{len(mapping)}_{text[::-1]}")
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok.string
        out.append((tok.type, text))
    return tokenize.untokenize(out)


def top_level(source: str) -> tuple[list[str], list[str]]:
    """(import statements, other top-level statements) as source text, decorators included."""
    lines = source.splitlines()
    imports, others = [], []
    for node in ast.parse(source).body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = "\n".join(lines[first - 1:node.end_lineno])
        (imports if isinstance(node, (ast.Import, ast.ImportFrom)) else others).append(text)
    return imports, others


def reorder(source: str) -> str:
    """Functions in reverse order, each with a new comment above it."""
    imports, others = top_level(source)
    body = [f"# part {i}: my own work\n{text}" for i, text in enumerate(reversed(others))]
    return "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def reformat(source: str) -> str:
    """Two-space indentation, comments dropped, blank lines doubled, a docstring per function."""
    out = []
    for line in source.splitlines():
        if line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        line = " " * (indent // 2) + line.lstrip(" ")
        out.append(line)
        if re.match(r"\s*def .*:\s*$", line):
            out.append(" " * (indent // 2 + 2) + '"""Computes what the exercise asks."""')
        if not line.strip():
            out.append("")
    return "\n".join(out) + "\n"


def as_notebook(source: str) -> str:
    """The student notebook of the assignment with this code in its cells."""
    from autograder.model.assignment import load_assignment
    from autograder.platforms.notebook.build import notebook_text

    return notebook_text(load_assignment("attention"), source)


def independents() -> dict[str, Path]:
    files = sorted((SUBMISSIONS / "correct").glob("*.py"))
    files += [p for p in sorted((SUBMISSIONS / "realworld").glob("*.py"))
              if not p.name.startswith("numpy_")]
    return {p.stem: p for p in files}


def planted() -> dict[str, tuple[str, str, str]]:
    """{copy's student: (original's student, file name, content)}."""
    read = lambda group, name: (SUBMISSIONS / group / f"{name}.py").read_text()  # noqa: E731
    return {
        "copy_renamed": ("einsum_style", "attention.py", rename(read("correct", "einsum_style"))),
        "copy_reordered": ("loop_over_heads", "attention.py",
                           reorder(read("correct", "loop_over_heads"))),
        "copy_reformatted": ("logsumexp_style", "attention.py",
                             reformat(read("correct", "logsumexp_style"))),
        "copy_notebook": ("finfo_min_helpers", "attention.ipynb",
                          as_notebook(read("correct", "finfo_min_helpers"))),
        "copy_disguised": ("mingpt_view_multi_head", "attention.py",
                           rename(reorder(reformat(read("realworld", "mingpt_view_multi_head"))))),
    }


STUBS = {"stub_py": ("attention.py", lambda: TEMPLATE.read_text()),
         "stub_notebook": ("attention.ipynb", lambda: TEMPLATE.with_suffix(".ipynb").read_text()),
         "stub_renamed": ("attention.py", lambda: rename(TEMPLATE.read_text()))}


def build(dest: Path) -> Path:
    """The class in GitHub Classroom's layout: one folder per student."""
    cls = dest / "class"
    for name, path in independents().items():
        (cls / name).mkdir(parents=True)
        shutil.copy(path, cls / name / "attention.py")
    for name, (_, file_name, text) in planted().items():
        (cls / name).mkdir(parents=True)
        (cls / name / file_name).write_text(text)
    for name, (file_name, text) in STUBS.items():
        (cls / name).mkdir(parents=True)
        (cls / name / file_name).write_text(text())
    return cls
