"""Is a construct in the student's code? For mistakes tied to one (`Mistake.construct`: `.T`,
a float32 cast, a fill of -1e4): such a mistake is named only when the code the failing case
runs holds the construct, or when its variant reproduces the student's outcome so exactly that
nothing else could have made it (`variants.find_matches`). An error message two different
shape mistakes share, or values that one mistake only comes closer to than the reference, is
not that: `k.transpose(2, 3)` crashing at a mask line must not be told it used `.T`.

The source is read here, in the trusted process, never run: the text of the function a check
calls and of every top-level function or class it names (transitively), without comments and
strings, so that a comment quoting `k.T` is not the construct.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from functools import lru_cache


def _code_only(text: str) -> str:
    """`text` without its comments and string literals (the tokens in between kept)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    lines = [list(line) for line in text.splitlines(keepends=True)]
    for t in tokens:
        if t.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        (srow, scol), (erow, ecol) = t.start, t.end
        for row in range(srow, erow + 1):
            line = lines[row - 1]
            start = scol if row == srow else 0
            end = ecol if row == erow else len(line)
            for i in range(start, min(end, len(line))):
                if line[i] != "\n":
                    line[i] = " "
    return "".join("".join(line) for line in lines)


@lru_cache(maxsize=16)
def _reach(source: str) -> tuple[str, dict[str, tuple[int, int]], dict[str, set[str]]] | None:
    """(the source without comments and strings, {top-level function or class: its lines},
    {name: the top-level names it reaches, itself included}); None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    top = {n.name: n for n in tree.body
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names = {name: {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and x.id in top}
             for name, node in top.items()}
    reach = {}
    for name in top:
        seen, todo = {name}, [name]
        while todo:
            for callee in names[todo.pop()]:
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        reach[name] = seen
    lines = {name: (node.lineno, node.end_lineno or node.lineno) for name, node in top.items()}
    return _code_only(source), lines, reach


@lru_cache(maxsize=256)
def code_for(source: str | None, function: str) -> str | None:
    """The code a call of the student's `function` may run: its own and that of every
    top-level function or class it names, transitively, comments and strings left out; None
    when unknown (no source: no construct is then required). A source that does not parse, or
    a function it does not define at the top level, counts whole."""
    if source is None:
        return None
    found = _reach(source)
    if found is None:
        return _code_only(source)
    code, lines, reach = found
    if function not in reach:
        return code
    rows = code.splitlines()
    return "\n".join("\n".join(rows[lines[n][0] - 1:lines[n][1]]) for n in sorted(reach[function]))


def has_construct(pattern: str, code: str | None) -> bool:
    """Whether `code` holds the construct (True when the code is unknown)."""
    return code is None or re.search(pattern, code) is not None
