"""The student notebook, generated from the student template so the two never drift.

The template `.py` is the one source of the code: its module docstring becomes the notebook's
introduction, its imports and other top-level statements the setup cell, and each function a
cell of its own under the question that grades it, followed by a `grader.check("<question>")`
cell (otter's `Notebook`). A question's answer variables (`NAME = None` lines of the template,
listed under `answers` in `assignment.toml`) share one cell under that question. The prose around the questions comes from an optional
`notebook.md` in the assignment folder:

    Text before the first marker: the notebook's introduction.
    <!-- question: softmax -->
    The explanation shown above the functions of question `softmax`.
    <!-- question: why_scale -->
    The explanation shown above the prompt of the written question `why_scale`.
    <!-- end -->
    Text after the last question (how to submit...).

`python -m autograder.platforms.notebook ASSIGNMENT` rewrites the committed notebook next to the template;
`--check` only says whether it is up to date. The same generator fills the notebook with any
other source (a solution, say), which is how tests build notebook submissions.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from ...model.assignment import Assignment, load_assignment
from ...console.arguments import Parser, add_assignment_argument, run_entry_point
from ...model.safetext import shown_path
from ...written.notebook import written_cells

_MARKER = re.compile(r"^<!--\s*(question:\s*([\w-]+)|end)\s*-->[ \t]*$", re.M)
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def student_assignment_dir(assignment: Assignment) -> str:
    """Where a student bundle keeps the assignment's data, relative to the bundle's root.

    The bundle mirrors the project (`autograder/`, `assignments/<name>/`), so the engine finds
    the assignment as it does here and the notebook, at the bundle's root, finds the tests.
    """
    return f"assignments/{assignment.root.name}"


def student_tests_dir(assignment: Assignment) -> str:
    return f"{student_assignment_dir(assignment)}/tests"


SETUP_CELL = """\
# Run this cell first: the checks below use `grader`. It finds the checking files (the folder
# of {zip_name}) here or in a folder above; opened on its own (Colab, say), upload
# {zip_name} next to the notebook, or set BUNDLE_URL to where your course publishes it.
BUNDLE_URL = {url!r}
import pathlib, subprocess, sys, urllib.request, zipfile

_tests, _zip = {tests!r}, {zip_name!r}
_here = pathlib.Path.cwd()
_root = next((f for f in [_here, *_here.parents, _here / _zip[:-4]]
              if (f / _tests).is_dir() and (f / "autograder").is_dir()), None)
if _root is None and "get_ipython" in globals():   # in Jupyter or Colab (not when graded)
    if not (_here / _zip).is_file() and BUNDLE_URL:
        urllib.request.urlretrieve(BUNDLE_URL, _here / _zip)
    if not (_here / _zip).is_file():
        raise RuntimeError("The checks need the files of {zip_name}, which are not in "
                           + str(_here) + ": upload {zip_name} next to this notebook (or "
                           "set BUNDLE_URL), then run this cell again.")
    with zipfile.ZipFile(_here / _zip) as _z:   # it holds the folder {folder}/
        _whole = all(n.startswith(_zip[:-4] + "/") for n in _z.namelist())   # else an old zip
        _z.extractall(_here if _whole else _here / _zip[:-4])
    _root = _here / _zip[:-4]
if _root is not None:
    sys.path.insert(0, str(_root))
    try:
        import otter
    except ImportError:   # Colab, plain Jupyter: only what the checks need, keeping your torch
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "otter-grader>=6",
                        "pandas>=2,<3"], check=True)
        import otter
    grader = otter.Notebook(tests_dir=str(_root / _tests))"""


def setup_cell(assignment: Assignment) -> str:
    """The notebook's first code cell: finds (or unpacks, or downloads) the student bundle, so
    the checks work wherever the notebook was opened, and makes `grader`."""
    url = assignment.config.get("student", {}).get("bundle_url") or None
    return SETUP_CELL.format(url=url, tests=student_tests_dir(assignment),
                             zip_name=f"{assignment.name}-student.zip",
                             folder=f"{assignment.name}-student")


def notebook_path(assignment: Assignment) -> Path:
    """The committed student notebook: next to the template, with the same stem."""
    return assignment.template.with_suffix(".ipynb")


def read_prose(assignment: Assignment) -> tuple[str, dict[str, str], str]:
    """(introduction, explanation per question id, closing text) from `notebook.md`."""
    path = assignment.root / "notebook.md"
    if not path.is_file():
        return "", {}, ""
    text = path.read_text()
    parts = _MARKER.split(text)
    intro, questions, end = parts[0].strip(), {}, ""
    # re.split with two groups gives: text, marker, qid-or-None, text, marker, qid, text...
    for i in range(1, len(parts), 3):
        body = parts[i + 2].strip()
        if parts[i + 1]:
            questions[parts[i + 1]] = body
        else:
            end = body
    known = {q.id for q in assignment.questions} | {q.id for q in assignment.written}
    unknown = set(questions) - known
    if unknown:
        raise ValueError(f"{path.name} explains unknown questions: {', '.join(sorted(unknown))}"
                         f" (its questions, autograded or written: {', '.join(sorted(known))})")
    return intro, questions, end


def split_source(source: str) -> tuple[str, list[tuple[str | None, str]]]:
    """(module docstring, top-level pieces in order), a piece being (function name or None,
    its source). Each piece keeps the comment lines right above it and its decorators."""
    tree = ast.parse(source)
    lines = source.splitlines()
    docstring = ast.get_docstring(tree, clean=True) or ""
    body = list(tree.body)
    previous_end = 0
    if docstring:
        previous_end = body[0].end_lineno
        body = body[1:]
    pieces: list[tuple[str | None, str]] = []
    for node in body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        start = first - 1
        # Comment lines directly above belong to the statement.
        while start > previous_end and lines[start - 1].lstrip().startswith("#"):
            start -= 1
        chunk = "\n".join(lines[start:node.end_lineno]).strip("\n")
        previous_end = node.end_lineno
        is_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        pieces.append((node.name if is_function else None, chunk))
    return docstring, pieces


def assigned_name(chunk: str) -> str | None:
    """The variable a piece of source assigns, when it is one `NAME = value` statement."""
    try:
        body = ast.parse(chunk).body
    except SyntaxError:
        return None
    if len(body) != 1:
        return None
    node = body[0]
    target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
        node.target if isinstance(node, ast.AnnAssign) else None
    return target.id if isinstance(target, ast.Name) else None


def functions_of(source: str) -> dict[str, str]:
    """{name: source} of the top-level functions of `source`."""
    return {name: chunk for name, chunk in split_source(source)[1] if name is not None}


def _is_def(text: str) -> bool:
    """Whether the last piece of `text` is a function (so the next one needs blank lines)."""
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return True
    return bool(body) and isinstance(body[-1], (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.ClassDef))


def _md(cid: str, text: str):
    cell = nbformat.v4.new_markdown_cell(text)
    cell["id"] = cid
    return cell


def _code(cid: str, text: str):
    cell = nbformat.v4.new_code_cell(text)
    cell["id"] = cid
    return cell


def build_notebook(assignment: Assignment, source: str | None = None):
    """The student notebook for `assignment`, with the template's code (or `source`'s)."""
    template = assignment.template.read_text()
    docstring, pieces = split_source(template if source is None else source)
    functions = {name: chunk for name, chunk in pieces if name is not None}
    intro, explanations, end = read_prose(assignment)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    cells = []
    if intro:
        cells.append(_md("intro", intro))
    if docstring:
        cells.append(_md("rules", docstring))
    cells.append(_code("otter-setup", setup_cell(assignment)))
    # Everything that is not a question's function (imports, constants, helpers) comes first,
    # in its original order: consecutive statements on consecutive lines, functions apart.
    in_questions = {f for q in assignment.questions for f in q.functions}
    asked = {a for q in assignment.questions for a in q.answers}
    # Written answers are Markdown cells of their own (written/notebook.py), not code.
    written = {q.id for q in assignment.written}
    answers = {}
    for name, chunk in pieces:
        if name is None and assigned_name(chunk) in asked:
            answers[assigned_name(chunk)] = chunk
    setup = ""
    for name, chunk in pieces:
        if name in in_questions or (name is None and assigned_name(chunk) in answers) or \
                (name is None and assigned_name(chunk) in written):
            continue
        if setup:
            single = name is None and not setup.endswith("\n\n\n") and not _is_def(setup)
            setup += "\n" if single else "\n\n\n"
        setup += chunk
    if setup:
        cells.append(_code("imports", setup))
    for number, q in enumerate(assignment.questions, 1):
        text = explanations.get(q.id) or f"## Question {number}: `{q.id}`"
        cells.append(_md(f"{q.id}-about", text))
        for fn in q.functions:
            code = functions.get(fn)
            if code is None:
                sig = assignment.api.get(fn)
                code = f"def {sig.render() if sig else fn + '()'}:\n    raise NotImplementedError"
            cells.append(_code(f"{q.id}-{fn}"[:64], code))
        if q.answers:
            cells.append(_code(f"{q.id}-answers"[:64], "\n\n".join(
                answers.get(a) or f"{a} = None" for a in q.answers)))
        cells.append(_code(f"{q.id}-check"[:64], f'grader.check("{q.id}")'))
    cells += written_cells(assignment.written, explanations)
    if end:
        cells.append(_md("end", end))
    nb.cells = cells
    return nb


def render(nb) -> str:
    """The notebook as written to disk (what `nbformat.write` produces)."""
    text = nbformat.writes(nb)
    return text if text.endswith("\n") else text + "\n"


def notebook_text(assignment: Assignment, source: str | None = None) -> str:
    return render(build_notebook(assignment, source))


PROG = "python -m autograder.platforms.notebook"


def main(argv: list[str] | None = None) -> int:
    """The command line's exit status; a user's mistake is one line on stderr."""
    return run_entry_point(_main, PROG, argv)


def _main(argv: list[str] | None) -> int:
    p = Parser(prog=PROG, description="Write the student notebook from the template.")
    add_assignment_argument(p, positional=True)
    p.add_argument("--check", action="store_true", help="only say whether it is up to date")
    args = p.parse_args(argv)
    assignment = load_assignment(args.assignment)
    path = notebook_path(assignment)
    text = notebook_text(assignment)
    if args.check:
        ok = path.is_file() and path.read_text() == text
        print(f"{path.name}: {'up to date' if ok else 'out of date; run without --check'}")
        return 0 if ok else 1
    path.write_text(text)
    print(f"wrote {shown_path(path)}")
    return 0
