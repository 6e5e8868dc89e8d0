"""A catalogue as data, for the student bundle: every mistake's id, name, hint and where it
applies, its rules (`when=`, `detail=`) written as the engine symptoms they are built from, and
which functions each variant replaces, but none of the variants' code (the catalogue's file is
instructor-only: its variants are the reference written the mistaken way).

A rule ships when it is built from the engine's symptoms (`autograder.diagnose.symptoms` and
`patterns`: plain predicates, and factories marked `@portable`, combined with `all_of`, `any_of`,
`not_`). Any other rule (a lambda of the catalogue's own) cannot be rebuilt without the
catalogue's file: in the bundle it says `OutcomeUnknown`, so a case it might decide gets no
name rather than a wrong one, and `autograder lint` reports it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from . import patterns, symptoms
from .catalogue import Catalogue, Family, Mistake
from .sources import OutcomeUnknown

_MODULES = (symptoms, patterns)


class NotPortable(ValueError):
    """A rule that is not built from the engine's symptoms."""


@functools.lru_cache(maxsize=1)
def _by_name() -> dict[str, Callable]:
    out = {}
    for module in _MODULES:
        for name, obj in vars(module).items():
            if callable(obj) and not name.startswith("_") \
                    and getattr(obj, "__module__", None) == module.__name__:
                out[name] = obj
    return out


@functools.lru_cache(maxsize=1)
def _plain_names() -> dict[int, str]:
    return {id(fn): name for name, fn in _by_name().items()}


def _value(v: Any) -> Any:
    if callable(v):
        return {"rule": to_spec(v)}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (tuple, list)):
        return {"items": [_value(x) for x in v]}
    raise NotPortable(f"an argument of type {type(v).__name__}")


def to_spec(fn: Callable) -> Any:
    """The data that rebuilds a rule (a predicate or a detail); NotPortable if it cannot ship."""
    made_by = getattr(fn, "made_by", None)
    if made_by is not None:
        name, args, kwargs = made_by
        return {"made_by": name, "args": [_value(a) for a in args],
                "kwargs": {k: _value(v) for k, v in kwargs.items()}}
    name = _plain_names().get(id(fn))
    if name is None:
        raise NotPortable(f"{getattr(fn, '__name__', fn)!r} is not one of the engine's symptoms")
    return {"symptom": name}


def _from_value(v: Any) -> Any:
    if isinstance(v, dict) and "rule" in v:
        return from_spec(v["rule"])
    if isinstance(v, dict) and "items" in v:
        return tuple(_from_value(x) for x in v["items"])
    return v


def from_spec(spec: Any) -> Callable:
    """The rule that `to_spec` wrote."""
    known = _by_name()
    if not isinstance(spec, dict):
        raise ValueError("a rule must be an object")
    if "symptom" in spec:
        name = spec["symptom"]
        if name not in known or hasattr(known[name], "__wrapped__"):
            raise ValueError(f"unknown symptom {name!r}")
        return known[name]
    factory = known.get(spec.get("made_by"))
    if factory is None or not hasattr(factory, "__wrapped__"):
        raise ValueError(f"unknown rule factory {spec.get('made_by')!r}")
    return factory(*[_from_value(a) for a in spec.get("args", [])],
                   **{k: _from_value(v) for k, v in spec.get("kwargs", {}).items()})


def _unknown(ev: Any) -> bool:
    raise OutcomeUnknown("a rule of the catalogue's own, not shipped")


def portability_problems(catalogue: Catalogue) -> list[str]:
    """One line per rule that cannot ship to students (for `autograder lint`)."""
    out = []
    for m in catalogue.mistakes.values():
        for what, fn in (("when=", m.when), ("detail=", m.detail)):
            if fn is None:
                continue
            try:
                to_spec(fn)
            except NotPortable as e:
                out.append(f"mistake {m.id}: its {what} rule cannot ship to students ({e}); "
                           "build it from autograder.diagnose's symptoms")
    return out


def catalogue_data(catalogue: Catalogue) -> dict:
    """The catalogue as plain data: names, hints, rules, and for each variant only which
    functions it replaces (and, for a family's mistakes, which knobs it turns)."""
    families: list[Family] = []
    mistakes = []
    for m in catalogue.mistakes.values():
        item: dict[str, Any] = {
            "id": m.id, "name": m.name, "hint": m.hint,
            "alternatives": [sorted(alt) for alt in m.alternatives],
            "functions": list(m.functions) if m.functions is not None else None,
            "questions": list(m.questions) if m.questions else None,
            "fallback": m.fallback, "combines": list(m.combines), "crashes": m.crashes,
            "leaves_others_right": m.leaves_others_right, "construct": m.construct,
        }
        for what, fn in (("when", m.when), ("detail", m.detail)):
            if fn is not None:
                try:
                    item[what] = to_spec(fn)
                except NotPortable:
                    item[what] = None
                    item[what + "_unportable"] = True
        settings = {}
        for i, (family, values) in m.settings.items():
            if family not in families:
                families.append(family)
            settings[str(i)] = {"family": families.index(family), "knobs": sorted(values)}
        item["settings"] = settings
        mistakes.append(item)
    return {"families": [f.function for f in families], "mistakes": mistakes}


def _shipped(*args, **kwargs):
    raise OutcomeUnknown("a shipped catalogue has no variant code")


class ShippedFamily(Family):
    """A family as the bundle knows it: its function and which knobs each mistake turns; its
    variants' outcomes come from the table."""

    def __init__(self, catalogue: Catalogue, function: str):
        super().__init__(catalogue, function, _shipped)

    def bind(self, settings: dict) -> Callable:
        return _shipped


def catalogue_from_data(data: dict) -> Catalogue:
    """The catalogue `catalogue_data` wrote: the same mistakes in the same order, with rules
    rebuilt and placeholders for the variants' code."""
    catalogue = Catalogue()
    families = [ShippedFamily(catalogue, fn) for fn in data.get("families", [])]
    for item in data["mistakes"]:
        m = Mistake(item["id"], name=item.get("name") or "", hint=item.get("hint") or "")
        m.alternatives = [{fn: _shipped for fn in alt} for alt in item.get("alternatives", [])]
        m.functions = tuple(item["functions"]) if item.get("functions") is not None else None
        m.questions = tuple(item["questions"]) if item.get("questions") else None
        m.fallback, m.crashes = bool(item.get("fallback")), bool(item.get("crashes"))
        m.leaves_others_right = bool(item.get("leaves_others_right"))
        construct = item.get("construct")
        m.construct = construct if isinstance(construct, str) else None
        m.combines = tuple(item.get("combines") or ())
        for what in ("when", "detail"):
            if item.get(what + "_unportable"):
                setattr(m, what, _unknown)
            elif item.get(what) is not None:
                setattr(m, what, from_spec(item[what]))
        for i, s in (item.get("settings") or {}).items():
            m.settings[int(i)] = (families[s["family"]], {k: None for k in s["knobs"]})
        catalogue.mistakes[m.id] = m
    return catalogue
