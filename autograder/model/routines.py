"""An assignment's forbidden routines as data: the `[routines]` table of `assignment.toml`.

An assignment names the library routines its questions may forbid (`[routines.<id>]`): the
routine's entry points (`names`: torch functions, methods and modules, `autograd.<Node>` names,
NumPy/SciPy functions, `aten::<op>`), the aten operators that compute it forward and backward
(`aten`), the routines that compute it too (`includes`: an attention kernel computes a
softmax), the operations library code must combine to compute it (`signature`: one operator of
each group), other words a library name of it may use (`also_named`, for the source scan) and,
optionally, how a refusal explains it (`explain`). A question forbids routines by id or by any
of their names.

The engine lists no routine. This module reads and checks the table and answers what an entry
stands for; what refusing it takes in a worker is the sandbox's (`sandbox/routines.py`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

KEYS = ("names", "aten", "includes", "signature", "also_named", "explain")


class RoutineError(ValueError):
    """A malformed `[routines]` table (an author's mistake, said in their words)."""


@dataclass(frozen=True)
class Routine:
    id: str
    names: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()      # as written: `_softmax` or `aten::_softmax`
    includes: tuple[str, ...] = ()
    signature: tuple[tuple[str, ...], ...] = ()
    also_named: tuple[str, ...] = ()
    explain: str = ""


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RoutineError(f"{where} must be a list of non-empty strings")
    return tuple(value)


def parse_routines(table: Any) -> dict[str, Routine]:
    """The `[routines]` table of an assignment.toml, checked: {id: Routine}."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise RoutineError("[routines] must be a table of routines ([routines.<id>])")
    routines: dict[str, Routine] = {}
    for rid, spec in table.items():
        where = f"[routines.{rid}]"
        if not isinstance(spec, dict):
            raise RoutineError(f"{where} must be a table")
        unknown = sorted(set(spec) - set(KEYS))
        if unknown:
            raise RoutineError(f"{where} has unknown keys {', '.join(unknown)} (known: "
                               f"{', '.join(KEYS)})")
        signature = spec.get("signature", [])
        if not isinstance(signature, list):
            raise RoutineError(f"{where} signature must be a list of lists of operators")
        groups = tuple(_strings(g, f"{where} signature's groups") for g in signature)
        explain = spec.get("explain", "")
        if not isinstance(explain, str):
            raise RoutineError(f"{where} explain must be a string")
        routines[rid] = Routine(
            rid, _strings(spec.get("names", []), f"{where} names"),
            _strings(spec.get("aten", []), f"{where} aten"),
            _strings(spec.get("includes", []), f"{where} includes"), groups,
            _strings(spec.get("also_named", []), f"{where} also_named"), explain)
    for r in routines.values():
        missing = [i for i in r.includes if i not in routines]
        if missing:
            raise RoutineError(f"[routines.{r.id}] includes unknown routines "
                               f"{', '.join(missing)}")
    return routines


class Routines:
    """An assignment's routines, and what a question's forbidden entry stands for."""

    def __init__(self, routines: Mapping[str, Routine] | None = None):
        self.routines = dict(routines or {})
        self._by_name: dict[str, Routine] = {}
        for r in self.routines.values():
            for n in r.names:
                self._by_name.setdefault(n, r)

    def routine_of(self, entry: str) -> Routine | None:
        """The routine a forbidden entry (a routine's id or one of its names) stands for."""
        if entry in self.routines:
            return self.routines[entry]
        return self._by_name.get(entry)

    def with_included(self, routine: Routine) -> list[Routine]:
        """`routine` and, transitively, the routines it includes."""
        out, todo = [], [routine]
        while todo:
            r = todo.pop(0)
            if r not in out:
                out.append(r)
                todo += [self.routines[i] for i in r.includes]
        return out

    def shown(self, entry: str) -> str:
        """How feedback names an entry: itself, or for a routine's id its first library name."""
        if entry in self.routines:
            names = [n for n in self.routines[entry].names if not n.startswith("autograd.")]
            return names[0] if names else entry
        return entry

    def explain(self, entry: str) -> str:
        routine = self.routine_of(entry)
        return routine.explain if routine is not None else ""

    def also_named(self, entry: str) -> tuple[str, ...]:
        """Other library words for the routine (`softmin` for a softmax), for the source scan."""
        routine = self.routine_of(entry)
        return routine.also_named if routine is not None else ()
