"""Lint: every case, hidden ones included, works against the reference.

A case that names a function the reference lacks (`q.check("rms_nrm", ...)`), or that the
reference itself fails, would give every student an internal error at grade time. Two checks
catch it before anyone is graded:

* without running anything, each `q.check("name", ...)` / `q.call("name", ...)` names a
  function the template defines (a typo is named, with the closest function);
* with the reference at hand, the reference is graded on every case, hidden ones included,
  in this process as `autograder snapshot` does (nothing is written), and each case it does not
  pass is named by its file and line, with what went wrong.
"""
from __future__ import annotations

import ast
import difflib
from pathlib import Path

from ..model.status import CaseStatus

CALLS = ("check", "call")   # Question methods whose first argument is a function's name


def _suggest(word: str, known) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


# A finding: (file, line, what is wrong, the fix), made a `lint.LintError` by the lint.
Finding = tuple[Path, int, str, str]


def function_names(path: Path, source: str, api: dict) -> list[Finding]:
    """Each `q.check("name", ...)` or `q.call("name", ...)` whose name the template does not
    define."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []   # reported with the question file
    errors = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in CALLS and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        name = node.args[0].value
        if name not in api:
            errors.append((
                path, node.lineno, f"the case calls `{name}`, which the template does not "
                f"define{_suggest(name, api)} (every student would get an internal error)",
                "name one of the template's functions: "
                + ", ".join(f"`{n}`" for n in sorted(api))))
    return errors


def case_lines(test_file: Path) -> dict[str, int]:
    """{case name shown to students: line of its function} in a question file."""
    from ..grading.runner import load_question_file

    lines = {}
    for tc in load_question_file(str(test_file)).test_cases:
        code = getattr(getattr(tc.body, "test_func", None), "__code__", None)
        lines[tc.name] = code.co_firstlineno if code is not None else 1
    return lines


def reference_failures(assignment, result) -> list[Finding]:
    """Each case, hidden ones included, the reference did not pass (`result`: the reference
    graded on every case), by its file and line."""
    errors = []
    for qid, q in result.questions.items():
        bad = [c for c in q.cases if CaseStatus(c.status) != CaseStatus.PASSED]
        if not bad:
            continue
        test_file = assignment.question(qid).test_file
        lines = case_lines(test_file)
        for c in bad:
            kind = "hidden case" if c.hidden else "public case"
            errors.append((
                test_file, lines.get(c.name, 1), f"the reference fails the {kind} "
                f"{c.name!r} ({c.status}: {c.message[:300]})",
                "correct the case (a function name, its arguments) or the reference"))
    return errors
