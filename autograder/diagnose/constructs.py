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


@lru_cache(maxsize=64)
def reach_code(source: str) -> dict[str, str] | None:
    """{top-level function or class name: its code and that of everything it names at the top
    level, transitively}, comments and strings left out; None when the source does not parse
    (then the whole file counts, `code_for`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    top = {n.name: n for n in tree.body
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    own = {name: _code_only(ast.get_source_segment(source, node) or "")
           for name, node in top.items()}
    names = {name: {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and x.id in top}
             for name, node in top.items()}
    # Module-level assignments of those names (`__call__ = forward`, aliases) count with them.
    out = {}
    for name in top:
        seen, todo = {name}, [name]
        while todo:
            for callee in names[todo.pop()]:
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        out[name] = "\n".join(own[n] for n in sorted(seen))
    return out


def code_for(source: str | None, function: str) -> str | None:
    """The code a call of the student's `function` may run, or None when unknown (no source:
    no construct is then required). A source that does not parse counts whole."""
    if source is None:
        return None
    reach = reach_code(source)
    if reach is None:
        return _code_only(source)
    return reach.get(function, _code_only(source))


def has_construct(pattern: str, code: str | None) -> bool:
    """Whether `code` holds the construct (True when the code is unknown)."""
    return code is None or re.search(pattern, code) is not None
