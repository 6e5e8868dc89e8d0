"""The catalogue API, for assignment authors: an assignment's `mistakes.py` makes a
`catalogue = Catalogue()` and registers its known mistakes on it (`variant`, `rule`, `describe`);
the engine finds and loads that file (`catalogue_for`), and reports read the names and hints
(`describe_mistakes`)."""
from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..model.assignment import Assignment, AssignmentError, resolve_config_path
from .symptoms import Predicate


@dataclass
class Mistake:
    """A known mistake: how to recognise it and what to tell the student."""

    id: str
    name: str = ""
    hint: str = ""
    # Each alternative maps function names to mistaken implementations `impl(ref, *args, **kw)`,
    # `ref.f` being the reference's `f` for the functions the alternative replaces and the
    # variant module's for the others (sources.py, `_Ref`). Any alternative may match.
    alternatives: list[dict[str, Callable]] = field(default_factory=list)
    when: Predicate | None = None
    functions: tuple[str, ...] | None = None     # rules only: the functions it applies to
    questions: tuple[str, ...] | None = None
    # Consulted only when no other mistake explains a case (autograder.diagnose.fallback):
    # rules from the evidence across a function's cases and its failing line, and
    # combinations of two mistakes (`combines`, their ids) that only together explain it.
    fallback: bool = False
    combines: tuple[str, ...] = ()
    detail: Callable | None = None      # Evidence -> str: this case's specifics, or ""
    # For alternatives registered through a `Family`: {alternative: (family, settings)}, so
    # that mistakes of one function can be combined (their settings merged) by the search for
    # several causes (autograder.diagnose.causes).
    settings: dict[int, tuple["Family", dict]] = field(default_factory=dict)
    # Whether the mistake stops the code from running (an error), for the order in which
    # several causes are listed: those come before mistakes in the values.
    crashes: bool = False
    # For a variant the search for several causes builds: the (mistake id, alternative) pairs
    # it combines, which name its outcome in the table the student bundle ships (`sources`).
    parts: tuple[tuple[str, int], ...] = ()
    # The mistake changes some calls only (those leaving an argument to its default) and its
    # hint says the others are right: a failing check that its variant leaves right
    # contradicts it (`variants.contradicted`).
    leaves_others_right: bool = False
    # A regular expression for the code construct the mistake is made with (`.T`, a float32
    # cast, a fill of -1e4), or None: without it in the code a case runs, the mistake is named
    # only where its variant reproduces the outcome exactly (`constructs`).
    construct: str | None = None

    def text(self) -> str:
        """The line shown next to a failing case."""
        return f"likely mistake: {self.name}. {self.hint}"


class Family:
    """One function written with knobs: `impl(ref, *args, **kwargs, **settings)` computes the
    function as the reference does with every setting at its default, and each mistake of the
    family turns some knobs. Mistakes of one family that turn different knobs can be made
    together: the search for several causes merges their settings into one call."""

    def __init__(self, catalogue: "Catalogue", function: str, impl: Callable):
        self.catalogue, self.function, self.impl = catalogue, function, impl

    def bind(self, settings: dict) -> Callable:
        impl, fixed = self.impl, dict(settings)

        def call(ref, *args, **kwargs):
            return impl(ref, *args, **kwargs, **fixed)

        return call

    def mistake(self, id: str, *, name: str | None = None, hint: str | None = None,
                when: Predicate | None = None, alternative: int = 0,
                questions: Iterable[str] | None = None, construct: str | None = None,
                **settings) -> Mistake:
        """Register the mistake `id` as this family with `settings`."""
        self.catalogue.variant(id, self.function, name=name, hint=hint, when=when,
                               alternative=alternative, questions=questions,
                               construct=construct)(self.bind(settings))
        m = self.catalogue.mistakes[id]
        m.settings[alternative] = (self, dict(settings))
        return m


class Catalogue:
    """The known mistakes of one assignment; the assignment's `mistakes.py` fills it."""

    def __init__(self) -> None:
        self.mistakes: dict[str, Mistake] = {}

    def _entry(self, id: str, name: str | None, hint: str | None,
               questions: Iterable[str] | None, construct: str | None = None) -> Mistake:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", id or ""):
            raise ValueError(f"mistake id {id!r}: use letters, digits and _")
        m = self.mistakes.setdefault(id, Mistake(id))
        if name:
            m.name = name.strip().rstrip(".")
        if hint:
            m.hint = hint.strip()
        if questions:
            m.questions = tuple(questions)
        if construct:
            re.compile(construct)
            m.construct = construct
        return m

    def variant(self, id: str, function: str, *, name: str | None = None,
                hint: str | None = None, when: Predicate | None = None, alternative: int = 0,
                questions: Iterable[str] | None = None,
                construct: str | None = None) -> Callable:
        """Decorator: `impl(ref, *args, **kwargs)` is `function` as this mistake computes it.

        Register several functions under one id (with the same `alternative`) for a mistake that
        spans them, e.g. a split and the merge that mirrors it; give another `alternative` number
        for another way of making the same mistake. `name` and `hint` are needed once per id.
        `construct`: a regular expression for the code the mistake is written with (`Mistake`).
        """
        m = self._entry(id, name, hint, questions, construct)

        def register(impl: Callable) -> Callable:
            while len(m.alternatives) <= alternative:
                m.alternatives.append({})
            if function in m.alternatives[alternative]:
                raise ValueError(f"mistake {id}: {function} registered twice in alternative "
                                 f"{alternative}")
            m.alternatives[alternative][function] = impl
            if when is not None:
                m.when = when
            return impl

        return register

    def family(self, function: str) -> Callable[[Callable], Family]:
        """Decorator: `impl(ref, *args, **kwargs, **settings)` is `function` with knobs; the
        returned `Family` registers mistakes as settings of those knobs."""
        return lambda impl: Family(self, function, impl)

    def describe(self, id: str, *, name: str, hint: str,
                 leaves_others_right: bool = False) -> Mistake:
        """Name a mistake whose variants are registered without a name (e.g. in a loop).
        `leaves_others_right`: its variants change only some calls (those that leave an
        argument to its default) and its hint says the others are right, so a failing check
        that a variant leaves right rules that variant out."""
        m = self._entry(id, name, hint, None)
        m.leaves_others_right = leaves_others_right
        return m

    def rule(self, id: str, *, name: str, hint: str, when: Predicate,
             functions: Iterable[str] | None = None,
             questions: Iterable[str] | None = None, construct: str | None = None) -> Mistake:
        """A mistake recognised from what the outcome shows, with no variant to run; with a
        `construct`, named only where the code holds it (a rule reproduces nothing)."""
        m = self._entry(id, name, hint, questions, construct)
        m.when = when
        m.functions = tuple(functions) if functions else None
        return m

    def fallback_rule(self, id: str, *, name: str, hint: str, when: Predicate,
                      detail: Callable | None = None, functions: Iterable[str] | None = None,
                      questions: Iterable[str] | None = None, crashes: bool = False) -> Mistake:
        """A rule tried only when no other mistake explains a case; `when` and `detail` may
        read the function's other cases (`ev.others`, see autograder.diagnose.fallback).
        `crashes`: the mistake makes the code raise (listed first among several causes)."""
        m = self.rule(id, name=name, hint=hint, when=when, functions=functions,
                      questions=questions)
        m.fallback, m.detail = True, detail
        m.crashes = crashes
        return m

    def combination(self, ids: Iterable[str], function: str, alternative: int = 0) -> Callable:
        """Decorator: `function` as the mistakes `ids` compute it together, named (both) only
        when it explains a case that none of them explains alone."""
        ids = tuple(ids)
        m = self.mistakes.setdefault("__".join(ids), Mistake("__".join(ids)))
        m.fallback, m.combines = True, ids
        return self.variant(m.id, function, alternative=alternative)

    def problems(self) -> list[str]:
        out = []
        for m in self.mistakes.values():
            unknown = [i for i in m.combines if i not in self.mistakes]
            if unknown:
                out.append(f"combination {m.id} names unknown mistakes {unknown}")
            if m.combines:
                continue
            if not m.name or not m.hint:
                out.append(f"mistake {m.id} needs a name and a hint")
            if not m.alternatives and m.when is None:
                out.append(f"mistake {m.id} has neither a variant nor a rule")
            if any(not alt for alt in m.alternatives):
                out.append(f"mistake {m.id} skips an alternative number")
        return out


_catalogues: dict[str, Catalogue] = {}
_lock = threading.Lock()


def catalogue_path(assignment: Assignment) -> Path | None:
    rel = assignment.config.get("mistakes")
    if not rel:
        return None
    return resolve_config_path(assignment.root, assignment.root.parent.parent, rel)


def catalogue_for(assignment: Assignment) -> Catalogue | None:
    """The assignment's catalogue, or None if it has none (or it is not on this machine)."""
    path = catalogue_path(assignment)
    if path is None or not path.is_file():
        return None
    return load_catalogue(path)


def load_catalogue(path: str | Path) -> Catalogue:
    key = str(Path(path).resolve())
    with _lock:
        cached = _catalogues.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"_mistakes_{digest}", key)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - an instructor's file: say what is wrong with it
        raise AssignmentError(f"mistake catalogue {Path(key).name}: {type(e).__name__}: {e}") \
            from e
    catalogue = getattr(module, "catalogue", None)
    if not isinstance(catalogue, Catalogue):
        raise AssignmentError(f"mistake catalogue {Path(key).name} defines no "
                              "`catalogue = Catalogue()`")
    problems = catalogue.problems()
    if problems:
        raise AssignmentError(f"mistake catalogue {Path(key).name}: " + "; ".join(problems))
    with _lock:
        return _catalogues.setdefault(key, catalogue)


def describe_mistakes(assignment: Assignment) -> dict[str, dict[str, str]]:
    """{mistake id: {"name", "hint"}} for reports."""
    catalogue = catalogue_for(assignment)
    if catalogue is None:
        return {}
    return {m.id: {"name": m.name, "hint": m.hint} for m in catalogue.mistakes.values()
            if not m.combines}
