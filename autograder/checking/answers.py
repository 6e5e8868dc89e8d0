"""Knowledge-check answers, for `Question.check_answer`: the canonical form in which equal
answers written differently agree, the salted digest a public snapshot keeps instead of the
answer, and the kind of answer expected, in words that do not give it away.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
from typing import Any

import numpy as np


class MissingAnswer:
    """Stands in for an answer variable the student's file does not define at all (otter
    passes None for it, which reads as "not answered yet")."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = MissingAnswer()


def canonical_answer(value: Any, depth: int = 0) -> Any:
    """A JSON-able form of an answer, so that equal answers written differently agree:
    numbers compare by value to 6 significant digits (4, 4.0 and np.int64(4) are one answer),
    text ignores case and surrounding spaces, tuples and lists (and 1-d arrays) are sequences.
    Raises TypeError for anything else."""
    if depth > 4:
        raise TypeError("nested too deeply")
    if isinstance(value, (bool, np.bool_)):
        return ["bool", bool(value)]
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, numbers.Real):
        try:
            x = float(value)
        except (OverflowError, ValueError):
            raise TypeError("a number too large to check") from None
        if not math.isfinite(x):
            return ["num", repr(x)]
        x = float(f"{x:.6g}")
        return ["num", int(x) if x.is_integer() and abs(x) < 2**63 else repr(x)]
    if isinstance(value, str):
        return ["str", value.strip().casefold()]
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return ["seq", [canonical_answer(v, depth + 1) for v in value]]
    raise TypeError(type(value).__name__)


def answer_digest(name: str, value: Any) -> str:
    """What a snapshot keeps of a public answer: a salted hash of its canonical form."""
    text = json.dumps([name, canonical_answer(value)], sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def answer_form(value: Any) -> str:
    """The kind of answer expected, in words that do not give the answer away."""
    c = canonical_answer(value)
    if c[0] == "bool":
        return "True or False"
    if c[0] == "num":
        return "a number"
    if c[0] == "str":
        return "a short text (a str)"
    items = c[1]
    if items and all(i[0] == "num" for i in items):
        return f"a tuple of {len(items)} numbers"
    return f"a tuple of {len(items)} items"


def form_of_canonical(c: Any) -> str:
    try:
        return answer_form(_from_canonical(c))
    except TypeError:
        return "?"


def _from_canonical(c: Any) -> Any:
    kind, v = c
    if kind == "bool":
        return v
    if kind == "num":
        return v if isinstance(v, int) else float(v)
    if kind == "str":
        return v
    return tuple(_from_canonical(i) for i in v)


def shown_answer(value: Any) -> str:
    text = repr(value) if not isinstance(value, np.ndarray) else \
        f"array({value.tolist()!r})" if value.size <= 16 else f"an array of shape {value.shape}"
    return text if len(text) <= 80 else text[:77] + "..."
