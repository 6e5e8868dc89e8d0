"""Places in a function's output: how feedback names them, how an author writes them (per-output
tolerances), and the tolerance table that holds at each.

A path is a tuple of steps: an `int` (an item of a tuple or list, by position), a `str` (a
dict's key) or a `Field` (a field of a namedtuple or a dataclass). Feedback writes it as code
(`output[1]["k"]`, `new_state["m"]["w"]`, `stats.mean`), starting from the assignment's name
for the item (`[outputs]` in assignment.toml) where there is one.
"""
from __future__ import annotations

import re
from typing import Any

from ..sandbox.execute import Field
from ..sandbox.wire import Record

DTYPE_KEYS = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")
# Where a tolerance table keeps its per-output tables: {path: {dtype: (rtol, atol)}}.
PATHS = "paths"


class OutputNames:
    """How feedback names a place in `function`'s output. `names`: the assignment's
    `[outputs]` entry for it, a list (one name per item of a returned tuple) or a string (a
    name for the whole output)."""

    def __init__(self, function: str, names: Any = None):
        self.function = function
        self.names = names if isinstance(names, (list, str)) else None

    def __call__(self, path: tuple) -> str:
        fn = self.function
        if not path:
            return f"the {self.names} returned by {fn}" if isinstance(self.names, str) \
                else f"the output of {fn}"
        first = path[0]
        if len(path) == 1 and isinstance(first, int) and not isinstance(self.names, str):
            if self.names is not None and 0 <= first < len(self.names):
                return f"the {self.names[first]} returned by {fn}"
            return f"item {first} returned by {fn}"
        return f"`{self.code(path)}` returned by {fn}"

    def code(self, path: tuple) -> str:
        """The path as code, from the output's name (`output` without one)."""
        base, rest = "output", path
        if isinstance(self.names, str):
            base = self.names
        elif self.names is not None and path and isinstance(path[0], int) and \
                0 <= path[0] < len(self.names):
            base, rest = self.names[path[0]], path[1:]
        return base + "".join(step_code(s) for s in rest)


def step_code(step: Any) -> str:
    if isinstance(step, Field):
        return f".{step}"
    if isinstance(step, int):
        return f"[{step}]"
    return f'["{step}"]'


_STEP = re.compile(r"""\[\s*(-?\d+)\s*\]|\[\s*"([^"]*)"\s*\]|\[\s*'([^']*)'\s*\]|\.(\w+)""")


def parse_path(text: Any, names: OutputNames) -> tuple | None:
    """An author's way of writing a place in the output: an `[outputs]` name (`"dlogits"`),
    code as feedback writes it (`'cache["k"]'`, `'output[1]["k"]'`, `"stats.mean"`,
    `'[1]["k"]'`), an int (an item of a returned tuple) or a tuple of steps. None when it is
    none of these."""
    if isinstance(text, int) and not isinstance(text, bool):
        return (text,)
    if isinstance(text, tuple):
        return text
    if not isinstance(text, str):
        return None
    head = re.match(r"[A-Za-z_]\w*", text)
    steps: list[Any] = []
    rest = text
    if head:
        word = head.group(0)
        rest = text[head.end():]
        if isinstance(names.names, list) and word in names.names:
            steps.append(names.names.index(word))
        elif not (word == "output" or word == names.names):
            return None
    while rest:
        m = _STEP.match(rest)
        if not m:
            return None
        index, dq, sq, field = m.groups()
        steps.append(int(index) if index is not None else Field(field) if field is not None
                     else dq if dq is not None else sq)
        rest = rest[m.end():]
    return tuple(steps)


def resolve_path(value: Any, steps: tuple) -> tuple | None:
    """`steps` as they lie in `value` (a decoded output): a field of a record may be written
    by position, by key or as a field; None where `value` has no such place."""
    out: list[Any] = []
    for step in steps:
        if isinstance(value, Record):
            names = list(value.fields)
            if isinstance(step, int) and not isinstance(step, bool):
                if not -len(names) <= step < len(names):
                    return None
                step = names[step]
            if step not in value.fields:
                return None
            out.append(Field(step))
            value = value.fields[step]
        elif isinstance(value, (tuple, list)):
            if not isinstance(step, int) or not -len(value) <= step < len(value):
                return None
            step = step % len(value)
            out.append(step)
            value = value[step]
        elif isinstance(value, dict):
            if str(step) not in value:
                return None
            out.append(str(step))
            value = value[str(step)]
        else:
            return None
    return tuple(out)


def split_tolerance(table: dict | None) -> tuple[dict, dict]:
    """A tolerance table as an author writes it: its per-dtype entries, and its other entries
    (a place in the output: a table of its own)."""
    dtypes, places = {}, {}
    for key, value in (table or {}).items():
        if key == PATHS:
            places.update(value)
        elif isinstance(key, str) and key in DTYPE_KEYS:
            dtypes[key] = value
        else:
            places[key] = value
    return dtypes, places


def case_tolerance(question: dict | None, case: dict | None, expected: Any,
                   names: OutputNames) -> tuple[dict, list[str]]:
    """The tolerance table one check compares with: the question's, then the case's, per dtype;
    per place in the output (resolved against the `expected` output) under `PATHS`. Also the
    places that name nothing in the output (an authoring mistake, said by the caller)."""
    q_dtypes, q_places = split_tolerance(question)
    c_dtypes, c_places = split_tolerance(case)
    table: dict = {**q_dtypes, **c_dtypes}
    bad: list[str] = []
    resolved: dict[tuple, dict] = {}
    for key, sub in {**q_places, **c_places}.items():
        steps = parse_path(key, names)
        path = resolve_path(expected, steps) if steps is not None else None
        if path is None or not isinstance(sub, dict):
            bad.append(str(key))
            continue
        resolved[path] = {**resolved.get(path, {}), **sub}
    if resolved:
        table[PATHS] = resolved
    return table, bad


def tolerance_at(table: dict | None, path: tuple) -> dict | None:
    """The per-dtype table that holds at `path`: the deepest place of `PATHS` on the way to
    it, over the case's own."""
    if not table or PATHS not in table:
        return table
    base = {k: v for k, v in table.items() if k != PATHS}
    places = table[PATHS]
    for cut in range(len(path), -1, -1):
        sub = places.get(tuple(path[:cut]))
        if sub is not None:
            return {**base, **sub}
    return base
