"""Naming a failing case that no single known mistake explains: for the grader's `Session`.

Real code fails differently from one-bug variants of the reference. After the variants and
rules (`find_matches`) have had their say, this module tries, in order:

1. combinations (`Catalogue.combination`): two mistakes made together, named together when
   their joint variant reproduces the case within tolerance and neither alone does;
2. the single mistake `find_matches` found, when it is the only one;
3. when none was found, the bounded search for several causes together
   (`autograder.diagnose.causes`): the helpers' named mistakes plus the function's own;
4. fallback rules (`Catalogue.fallback_rule`), only when nothing else matched: predicates that
   may also read the function's other cases in this submission (`ev.others`: which ranks ran,
   which failed and how) and the student's failing line. Exactly one must hold.

Everything here runs in the trusted process on plain data, after the student's last call.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .catalogue import Mistake
from .causes import search
from .sources import OutcomeUnknown
from .symptoms import Evidence, distance

if TYPE_CHECKING:
    from .variants import CheckRecord, VariantRunner


@dataclass
class CaseEvidence(Evidence):
    """Evidence plus the other checks of the same function in this submission."""

    others: tuple = ()      # CheckRecords (passed and failed), this one included
    # The CheckRecords of the assignment's function the failing line is in, when that is
    # another one (a helper the student wrote: their attention inside their multi-head).
    helper: tuple = ()


@dataclass
class Named:
    ids: list[str]
    text: str


def _within_tolerance(runner: "VariantRunner", m: Mistake, record: "CheckRecord") -> bool:
    """Some alternative of `m` reproduces the student's outcome within the tolerances."""
    for i, alt in enumerate(m.alternatives):
        if not runner.affects(alt, record.function):
            continue
        out = runner.outcome(m, i, record)
        if out is not None and distance(out, record.got, record.tolerance) <= 1.0:
            return True
    return False


def _combination_explains(runner: "VariantRunner", m: Mistake, record: "CheckRecord",
                          passed: dict) -> bool:
    """The combination reproduces this outcome within tolerance and agrees with the passes."""
    for i, alt in enumerate(m.alternatives):
        if not runner.affects(alt, record.function):
            continue
        out = runner.outcome(m, i, record)
        if out is not None and distance(out, record.got, record.tolerance) <= 1.0 \
                and runner.consistent(m, i, passed):
            return True
    return False


def _needs_both(runner: "VariantRunner", m: Mistake, record: "CheckRecord", passed: dict) -> bool:
    """The combination explains this outcome and none of its mistakes does alone."""
    members = [runner.catalogue.mistakes[i] for i in m.combines]
    return _combination_explains(runner, m, record, passed) and \
        not any(_within_tolerance(runner, x, record) for x in members if x.alternatives)


def _combination(runner: "VariantRunner", record: "CheckRecord", found: list[Mistake],
                 passed: dict, others: list["CheckRecord"]) -> Named | None:
    mistakes = runner.catalogue.mistakes
    for m in mistakes.values():
        if not m.combines or (m.questions and record.question not in m.questions):
            continue
        if not any(runner.affects(alt, record.function) for alt in m.alternatives):
            continue
        if any(f.id not in m.combines for f in found):
            continue        # something outside the combination fits: not this one
        # Named where both are needed to explain the case, and also on the function's other
        # cases the combination explains (where one alone would do, e.g. where eps is below
        # float32's tolerance) once some case of the function needs both.
        if not _combination_explains(runner, m, record, passed):
            continue
        if not (_needs_both(runner, m, record, passed)
                or any(r is not record and r.far > 1.0 and r.got.get("status") == "ok"
                       and _needs_both(runner, m, r, passed) for r in others)):
            continue
        members = [mistakes[i] for i in m.combines]
        text = "likely mistakes, both together: " + "; and ".join(x.name for x in members) \
            + ". " + " ".join(x.hint for x in members)
        return Named(list(m.combines), text)
    return None


def _fallback(runner: "VariantRunner", record: "CheckRecord", others: list["CheckRecord"],
              helper: list["CheckRecord"]) -> Named | None:
    ev = CaseEvidence(**{f.name: getattr(record.evidence(), f.name)
                         for f in dataclasses.fields(Evidence)}, others=tuple(others),
                      helper=tuple(helper))
    hits = []
    for m in runner.catalogue.mistakes.values():
        if not m.fallback or m.combines or m.when is None:
            continue
        if m.questions and record.question not in m.questions:
            continue
        if m.functions is not None and record.function not in m.functions:
            continue
        try:
            if m.when(ev):
                hits.append(m)
        except OutcomeUnknown:
            raise
        except Exception:  # noqa: BLE001 - a rule that cannot judge this case does not match
            continue
    if len(hits) != 1:
        return None
    m = hits[0]
    detail = ""
    if m.detail is not None:
        try:
            detail = str(m.detail(ev) or "").strip()
        except OutcomeUnknown:
            raise
        except Exception:  # noqa: BLE001 - the name stands without its specifics
            detail = ""
    text = f"likely mistake: {m.name}. " + (f"{detail} " if detail else "") + m.hint
    return Named([m.id], text)


def together(mistakes: list[Mistake]) -> str:
    """The text naming several mistakes made together, in the order given."""
    names = [m.name for m in mistakes]
    listed = names[0] if len(names) == 1 else "; ".join(names[:-1]) + "; and " + names[-1]
    return f"likely mistakes, all together: {listed}. " + " ".join(m.hint for m in mistakes)


def decide(runner: "VariantRunner", record: "CheckRecord", found: list[Mistake], passed: dict,
           others: list["CheckRecord"], helper: list["CheckRecord"] = (),
           named: dict[str, set[str]] | None = None) -> Named | None:
    """The mistake(s) to name on this failing case, or None to leave the message alone.
    `named`: {function: mistake ids already named on its failing cases in this submission}."""
    if record.got.get("status") in ("not_implemented", "memory") or record.far <= 1.0:
        return None
    combined = _combination(runner, record, found, passed, others)
    if combined is not None:
        return combined
    if len(found) == 1:
        return Named([found[0].id], found[0].text())
    if found:
        # Several fit: one that reproduces the outcome within the tolerances beats those that
        # only come much closer than the reference (adding a boolean mask comes close to not
        # masking at all, and reproduces exactly only as itself). Otherwise say nothing.
        exact = [m for m in found if m.alternatives and _within_tolerance(runner, m, record)]
        if len(exact) == 1:
            return Named([exact[0].id], exact[0].text())
        # Still several (a normalisation over axis 0 of a 2-D table is both a helper whose
        # default axis is 0 and a caller normalising along the wrong axis): the one already
        # named on the cases of a helper this function calls, if only one is, is the student's
        # own helper carrying its mistake here.
        helpers = runner.calls.get(record.function, frozenset()) - {record.function}
        known = set().union(*((named or {}).get(h, set()) for h in helpers))
        carried = [m for m in (exact or found) if m.id in known]
        if len(carried) == 1:
            return Named([carried[0].id], carried[0].text())
        return None
    ids = search(runner, record, passed, named or {})
    if ids:
        return Named(ids, together([runner.catalogue.mistakes[i] for i in ids]))
    return _fallback(runner, record, others, list(helper))
