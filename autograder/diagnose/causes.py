"""Several causes behind one failing case: a bounded search over combinations of known mistakes.

Real code often makes two or three mistakes in one function (a pre-norm block that also uses
GELU), or one in a helper and one in the function itself. No single variant reproduces such an
outcome, so `find_matches` names nothing. This module tries the combinations:

* the mistakes already named on the failing cases of the helpers the function calls (the
  student's own helper is wrong in that way, so the function's outcome carries it), fixed;
* plus up to `MAX_OWN` mistakes of the function itself. Mistakes that replace the same
  function combine only through a `Family` (their settings are merged into one call, when they
  turn different knobs); any other overlap cannot be built and is skipped.

A combination is named only when it reproduces the student's outcome within the question's
tolerances (output and gradients), agrees with every check the student passed on the functions
it replaces, and is the only set of mistakes of the smallest size that does (a smaller set
would have been found first; two different sets of the same size are ambiguous: name nothing).

Cost is bounded by counting, not by time: at most `MAX_TRIES` combinations are run per failing
check, each a forward pass (and a backward pass only for those whose output already matches),
on the grader's own inputs. Outcomes are cached per grading process like single variants', so a
class pays for each combination and case once. Only checks whose call ran (status "ok") are
searched: a crash is the fallback rules' business (fixed-rank code, an unhandled None).
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Callable

from .catalogue import Mistake
from .symptoms import distance

if TYPE_CHECKING:
    from .variants import CheckRecord, VariantRunner

MAX_OWN = 3         # mistakes of the function itself in one combination
MAX_TRIES = 160     # combinations run per failing check, whatever the catalogue holds
MAX_BASES = 4       # ways of taking the helpers' named mistakes (their alternatives)

Alternative = tuple[Mistake, int]


def merged_replacements(parts: list[Alternative]) -> dict[str, Callable] | None:
    """One replacement per function for these alternatives together, or None when two of them
    replace the same function in ways that cannot be merged."""
    plain: dict[str, Callable] = {}
    families: dict[str, tuple] = {}     # function -> (family, merged settings)
    for m, i in parts:
        setting = m.settings.get(i)
        for function, impl in m.alternatives[i].items():
            if setting is not None and setting[0].function == function:
                family, values = setting
                if function in plain:
                    return None
                if function in families:
                    have_family, have = families[function]
                    if have_family is not family or set(have) & set(values):
                        return None     # two settings of one knob, or another family
                    families[function] = (family, {**have, **values})
                else:
                    families[function] = (family, dict(values))
            else:
                if function in plain or function in families:
                    return None
                plain[function] = impl
    for function, (family, values) in families.items():
        plain[function] = family.bind(values)
    return plain


def own_alternatives(runner: "VariantRunner", record: "CheckRecord") -> list[Alternative]:
    """The alternatives of mistakes that replace the checked function itself."""
    out = []
    for m in runner.catalogue.mistakes.values():
        if m.fallback or m.combines or (m.questions and record.question not in m.questions):
            continue
        for i, alt in enumerate(m.alternatives):
            if record.function in alt:
                out.append((m, i))
    return out


def _helper_alternatives(runner: "VariantRunner", record: "CheckRecord",
                         named: dict[str, set[str]]) -> list[list[Alternative]]:
    """For each mistake named on a helper's failing cases (a function the checked one calls),
    its alternatives that replace that helper and not the checked function."""
    calls = runner.calls.get(record.function, frozenset())
    groups, seen = [], set()
    for helper, ids in named.items():
        if helper == record.function or helper not in calls:
            continue
        for mid in sorted(ids):
            m = runner.catalogue.mistakes.get(mid)
            if m is None or m.id in seen or not m.alternatives:
                continue
            alts = [(m, i) for i, alt in enumerate(m.alternatives)
                    if helper in alt and record.function not in alt]
            if alts:
                seen.add(m.id)
                groups.append(alts)
    return groups


def _reproduces(runner: "VariantRunner", combo: Mistake, record: "CheckRecord",
                passed: dict) -> bool:
    out = runner.outcome(combo, 0, record, grads=False)
    if out is None or distance(out, record.got, record.tolerance, 1.0, grads=False) > 1.0:
        return False
    if record.want_grad:
        out = runner.outcome(combo, 0, record)
        if out is None or distance(out, record.got, record.tolerance, 1.0) > 1.0:
            return False
    return runner.consistent(combo, 0, passed)


def search(runner: "VariantRunner", record: "CheckRecord", passed: dict,
           named: dict[str, set[str]]) -> list[str] | None:
    """The ids of the mistakes that together reproduce this failing check, in the catalogue's
    order, or None. `named`: {function: mistake ids named on its failing cases} so far."""
    if record.got.get("status") != "ok" or record.far <= 1.0:
        return None
    own = own_alternatives(runner, record)
    helpers = _helper_alternatives(runner, record, named)
    bases = list(itertools.islice(itertools.product(*helpers), MAX_BASES)) if helpers else [()]
    order = {mid: n for n, mid in enumerate(runner.catalogue.mistakes)}
    tries = 0
    for size in range(0, MAX_OWN + 1):
        hits: dict[tuple[str, ...], Mistake] = {}
        for base in bases:
            if len(base) + size < 2:
                continue        # one mistake alone is find_matches's business
            for extra in itertools.combinations(own, size):
                ids = [m.id for m, _ in base] + [m.id for m, _ in extra]
                if len(set(ids)) != len(ids):
                    continue    # two alternatives of one mistake
                key = tuple(sorted(ids))
                if key in hits:
                    continue
                parts = list(base) + list(extra)
                replacements = merged_replacements(parts)
                if replacements is None:
                    continue
                if tries >= MAX_TRIES:
                    return _one(hits, order)
                tries += 1
                ordered = sorted((m.id, i) for m, i in parts)
                combo = Mistake("+".join(f"{mid}.{i}" for mid, i in ordered),
                                alternatives=[replacements], parts=tuple(ordered))
                if _reproduces(runner, combo, record, passed):
                    hits[key] = combo
        if hits:
            return _one(hits, order)
    return None


def _one(hits: dict[tuple[str, ...], Mistake], order: dict[str, int]) -> list[str] | None:
    """The ids of the only set of mistakes found, in the catalogue's order; None when there is
    none or there are two different ones (ambiguous: name nothing)."""
    if len(hits) != 1:
        return None
    return sorted(next(iter(hits)), key=lambda i: order.get(i, 0))
