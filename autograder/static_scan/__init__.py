"""A static scan of a submission's source, in the trusted process: the second signal of the
grader's integrity checks, beside the run-time evidence from the worker (forbidden operations it
saw, escapes it refused). Nothing here imports or runs student code.

What the scan finds is of two kinds:

* **Proof** (`ScanResult.tamper`): a store into the engine's own modules, resolved statically
  (`engine.check = ...`, `setattr(sys.modules["autograder.x"], ...)`). Only this withholds
  points, under the assignment's `[integrity] on_tamper`.
* **Doubts** (`ScanResult.review`, and the shortcut sightings of `ScanResult.forbidden`): a
  library routine a question forbids seen on a graded function's call graph (if it runs, the
  worker's run-time check stops it), a library attribute looked up by a name built at run time,
  frames, `gc` scans, native code, the worker's descriptors, `sys.modules` beyond a lookup by
  constant name, stores into library modules, code generated at run time. They flag the
  submission for the instructor's review and never cost points.

References are resolved through imports, aliases, assignments, `getattr` with constant (or
constant-built) names, `importlib`, `__import__`, `vars(...)` / `__dict__`, `sys.modules[...]`
and the module's call graph (helpers, classes such as a custom `autograd.Function`, lambdas,
default arguments). Code that cannot run when the file is graded (`if 0:`, a `__main__` block)
is left out (`dead_code`). The cost of a scan is bounded on any input (`budget`, `folding`); a
source over the budget is cut short (`ScanResult.cut_short`): graded on run-time evidence and
flagged for review.

The package, by concern: `vocabulary` (what the rules look for, `Finding`), `folding` (constant
strings), `dead_code` (branches that never run), `model` (scopes and bindings), `values` (name
resolution), `rules` (what each node records: references, call-graph edges, tampering),
`shortcuts` (matching references against a question's forbidden list), `budget` (the fixed
cost a scan may take). This module is the public face: `scan_source` and `ScanResult`.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterable, Mapping, Sequence

from .budget import Budget, ScanCutShort
from .model import Scope
from .rules import analyse
from .shortcuts import forbidden_why, matches_forbidden, names_same_routine
from .values import Analysis
from .vocabulary import (CUT_SHORT_MESSAGE, INTEGRITY_MESSAGE, MAX_FINDINGS, PROVEN_RULES,
                         REVIEW_MESSAGE, Finding, code_text)

__all__ = ["CUT_SHORT_MESSAGE", "INTEGRITY_MESSAGE", "REVIEW_MESSAGE", "Finding", "ScanResult",
           "matches_forbidden", "names_same_routine", "scan_source"]


class ScanResult:
    """What the scan found, and which graded function reaches which finding."""

    def __init__(self, analysis: Analysis | None, api: Sequence[str],
                 cut_short: str | None = None, budget: Budget | None = None):
        self._a = analysis
        self.api = list(api)
        # The work the scan did, counted (syntax nodes, steps, folded characters): what its
        # cost is bounded by, whatever the clock of a loaded machine says.
        self.work = {"nodes": budget.nodes, "steps": budget.steps,
                     "folded_chars": budget.folded_chars} if budget is not None else {}
        # Why the scan stopped before the end (the source is over its budget), or None: then
        # nothing was checked, and the row is flagged for review (`integrity`).
        self.cut_short = cut_short
        self._reach: dict[str, set[int]] = {}
        self._forbidden: dict[tuple, list[Finding]] = {}
        self.tamper: list[Finding] = []     # proof: withholds points (`integrity`)
        self.review: list[Finding] = []     # doubts: flagged for review, no points taken
        if analysis is not None:
            seen = set()
            for s in analysis.scopes:
                for f in s.tamper:
                    key = (f.rule, f.line, f.code)
                    if key in seen:
                        continue
                    seen.add(key)
                    if f.rule in PROVEN_RULES:
                        if len(self.tamper) < MAX_FINDINGS:
                            self.tamper.append(f)
                    elif len(self.review) < MAX_FINDINGS:
                        self.review.append(replace(f, kind="review"))
            self.tamper.sort(key=lambda f: (f.line, f.rule))
            self.review.sort(key=lambda f: (f.line, f.rule))

    @property
    def error(self) -> str | None:
        """The scan could not check the file (the same as `cut_short`)."""
        return self.cut_short

    def _closure(self, start: Iterable[int]) -> set[int]:
        """Scopes that may run once `start` runs: what they reference, the class bodies they
        define, and every method of a class they reference."""
        a = self._a
        children: dict[int, list[Scope]] = {}
        for s in a.scopes:
            if s.parent is not None:
                children.setdefault(s.parent.index, []).append(s)
        seen: set[int] = set()
        stack = list(start)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            scope = a.scopes[i]
            stack.extend(scope.edges - seen)
            for c in children.get(i, []):
                if c.kind == "class" or scope.kind == "class":
                    stack.append(c.index)
        return seen

    def reachable(self, function: str) -> set[int]:
        """Indexes of the scopes a graded function can run (its call graph)."""
        if self._a is None:
            return set()
        if function not in self._reach:
            start = {v[1] for v in self._a.name_values(self._a.module, function, 0)
                     if v[0] in ("user", "instance")}
            self._reach[function] = self._closure(start)
        return self._reach[function]

    def _direct(self, function: str) -> list[Finding]:
        """The graded name bound to a library object itself (`softmax = torch.softmax`)."""
        return [Finding("forbidden", "library", 0, f"{function} = {v[1]}", v[1])
                for v in self._a.name_values(self._a.module, function, 0) if v[0] == "lib"]

    def forbidden(self, function: str, entries: Sequence[str],
                  words: Mapping[str, Sequence[str]] | None = None) -> list[Finding]:
        """The shortcuts among `entries` (a question's forbidden list) the function reaches;
        `words`: other library words of each entry's routine (`also_named`)."""
        if self._a is None or not entries:
            return []
        words = words or {}
        also = {e: tuple(words.get(e, ())) for e in entries}
        key = (function, tuple(entries))
        if key in self._forbidden:
            return self._forbidden[key]
        found, seen = [], set()
        candidates = self._direct(function)
        for i in sorted(self.reachable(function)):
            for rule, line, node, target in self._a.scopes[i].refs:
                f = Finding("forbidden", rule, line, "", target)
                if any(matches_forbidden(f, e, also[e]) for e in entries):
                    candidates.append(replace(f, code=code_text(node)))   # only what is shown
        for f in candidates:
            for entry in entries:
                if matches_forbidden(f, entry, also[entry]) and (f.line, f.code) not in seen:
                    seen.add((f.line, f.code))
                    found.append(replace(f, why=forbidden_why(f, entry)))
                    break
        self._forbidden[key] = found[:20]
        return self._forbidden[key]

    def tamper_reach(self) -> dict[Finding, set[str] | None]:
        """For each proven tampering finding: the graded functions that can run it, or None when it
        can run while the file is imported (or cannot be placed: then assume the worst)."""
        out: dict[Finding, set[str] | None] = {}
        if self._a is None:
            return out
        a = self._a
        at_import = self._closure([0])
        where: dict[Finding, set[int]] = {}
        for s in a.scopes:
            for f in s.tamper:
                if f.rule in PROVEN_RULES:
                    where.setdefault(f, set()).add(s.index)
        for f, scopes in where.items():
            if scopes & at_import:
                out[f] = None
                continue
            fns = {fn for fn in self.api if scopes & self.reachable(fn)}
            out[f] = fns or None
        return out


def scan_source(sources: str | Sequence[str], api: Sequence[str] = (),
                contracts: Mapping[str, Sequence[str]] | None = None) -> ScanResult:
    """Scan a .py file's source, or a notebook's code cells (run in order as one module).
    `api` names the graded functions; `contracts` gives their parameters as the grader passes
    them (then a parameter of the student's own keeps its default). Sources that do not parse
    are left out (the grader reports their syntax errors). A source over the scan's budget
    (`budget`) gives a result that says so in `cut_short`."""
    if isinstance(sources, str):
        sources = [sources]
    budget = Budget()
    body: list[ast.stmt] = []
    try:
        budget.check_size(sum(len(src) for src in sources))
        for src in sources:
            try:
                body += ast.parse(src).body
            except (SyntaxError, ValueError):
                continue
            budget.check_time()
        analysis = Analysis(ast.Module(body=body, type_ignores=[]), budget)
        analysis.contracts = {k: list(v) for k, v in (contracts or {}).items()}
        analysis.graded = set(api)
        analyse(analysis)
    except ScanCutShort as e:
        return ScanResult(None, api, cut_short=str(e), budget=budget)
    except RecursionError:
        return ScanResult(None, api, cut_short="expressions nested too deeply to analyse",
                          budget=budget)
    except MemoryError:
        return ScanResult(None, api, cut_short="too large to analyse in memory", budget=budget)
    return ScanResult(analysis, api, budget=budget)
