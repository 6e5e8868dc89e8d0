"""Case inputs that could not reach a student's process.

When grading, every input a case makes travels to the student's worker in the checked wire
format (`sandbox/wire.py`): tensors, arrays, numbers, strings, None, and tuples, lists and dicts
of them. Anything else (a `torch.dtype`, a function, an object of the author's) arrives as an
opaque stand-in, and the student's function fails on it in a way no student can act on, while
the same case passes when the reference runs in the author's own process (`lint`, `snapshot`).
`autograder snapshot` and `lint` run the reference through `travelling`, so such a case fails
there, saying what cannot travel.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ..sandbox import wire


def untravelled(value: Any) -> list[str]:
    """What in `value` the wire format cannot carry (the type of each such part)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        if node.get("t") == "other":
            found.append(str(node.get("type")))
        items = node.get("items")
        for child in (items.values() if isinstance(items, dict) else items or []):
            walk(child)

    walk(wire.encode(value, []))
    return found


def travelling(function: Callable) -> Callable:
    """`function`, refusing a call whose inputs could not be sent to a student's process."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        stuck = untravelled((tuple(args), dict(kwargs)))
        if stuck:
            kinds = ", ".join(sorted(set(stuck)))
            raise TypeError(f"this case gives {function.__name__} a value of type {kinds}, "
                            "which cannot be sent to a student's process when graded (inputs "
                            "are tensors, arrays, numbers, strings, None, and tuples, lists and "
                            "dicts of them): pass what decides it another way")
        return function(*args, **kwargs)

    return call
