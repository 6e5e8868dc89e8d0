"""A static scan of a submission's source, in the trusted process: library shortcuts and
tampering with the grader, found without importing or running anything of the student's.

Checks computed in the worker (forbidden calls, gradients, mutated inputs) can be forged by a
submission that patches the engine's modules there, so this scan is the trusted half:

* **Library shortcuts.** Every reference to a library object is resolved through imports,
  aliases, assignments, `getattr` with constant (or constant-built) names, `importlib`,
  `__import__`, `vars(...)` / `__dict__` and `sys.modules[...]`. A question's forbidden entry
  (`torch.nn.functional.softmax`) is matched by any library path naming the same routine
  (`torch.ops.aten._softmax`, `torch._C._nn.softmax`, `log_softmax`, `nn.Softmax`), by a method
  of an unknown object (`x.softmax(...)`) when the entry is a `torch.Tensor` method, by torch's
  decomposition modules, by code that switches off torch-function modes, and by a library
  attribute looked up under a name built at run time. A reference counts for a graded function
  when the function reaches it through the module's call graph (helpers, classes such as a
  custom `autograd.Function`, lambdas, default arguments, module-level aliases).
* **Tampering.** Source that touches the engine: its modules (`autograder`), `sys.modules`
  beyond a lookup by constant name, frames and tracebacks, `gc` object scans, `ctypes`, file
  descriptors it did not open (the worker's channel), stores into library modules, and code
  generated at run time (`exec`/`eval` of a non-constant string).

A name merely mentioned in a comment or string, or a student function that happens to be named
`softmax`, is not a reference to the library's. Nothing here imports or runs student code.

The package, by concern: `vocabulary` (what the rules look for, `Finding`), `folding` (constant
strings), `model` (scopes and bindings), `values` (name resolution), `rules` (what each node
records: references, call-graph edges, tampering), `shortcuts` (matching references against a
question's forbidden list), `budget` (the fixed cost a scan may take). This module is the public
face: `scan_source` and `ScanResult`.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterable, Sequence

from .budget import Budget, ScanCutShort
from .model import Scope
from .rules import analyse
from .shortcuts import forbidden_why, matches_forbidden, names_same_routine
from .values import Analysis
from .vocabulary import CUT_SHORT_MESSAGE, INTEGRITY_MESSAGE, MAX_FINDINGS, Finding, code_text

__all__ = ["CUT_SHORT_MESSAGE", "INTEGRITY_MESSAGE", "Finding", "ScanResult", "matches_forbidden",
           "names_same_routine", "scan_source"]


class ScanResult:
    """What the scan found, and which graded function reaches which finding."""

    def __init__(self, analysis: Analysis | None, api: Sequence[str],
                 cut_short: str | None = None):
        self._a = analysis
        self.api = list(api)
        # Why the scan stopped before the end (the source is over its budget), or None: then
        # nothing was checked, and the row is flagged for review (`integrity`).
        self.cut_short = cut_short
        self._reach: dict[str, set[int]] = {}
        self._forbidden: dict[tuple, list[Finding]] = {}
        self.tamper: list[Finding] = []
        if analysis is not None:
            seen = set()
            for s in analysis.scopes:
                for f in s.tamper:
                    key = (f.rule, f.line, f.code)
                    if key not in seen and len(self.tamper) < MAX_FINDINGS:
                        seen.add(key)
                        self.tamper.append(f)
            self.tamper.sort(key=lambda f: (f.line, f.rule))

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

    def forbidden(self, function: str, entries: Sequence[str]) -> list[Finding]:
        """The shortcuts among `entries` (a question's forbidden list) the function reaches."""
        if self._a is None or not entries:
            return []
        key = (function, tuple(entries))
        if key in self._forbidden:
            return self._forbidden[key]
        found, seen = [], set()
        candidates = self._direct(function)
        for i in sorted(self.reachable(function)):
            for rule, line, node, target in self._a.scopes[i].refs:
                f = Finding("forbidden", rule, line, "", target)
                if any(matches_forbidden(f, e) for e in entries):
                    candidates.append(replace(f, code=code_text(node)))   # only what is shown
        for f in candidates:
            for entry in entries:
                if matches_forbidden(f, entry) and (f.line, f.code) not in seen:
                    seen.add((f.line, f.code))
                    found.append(replace(f, why=forbidden_why(f, entry)))
                    break
        self._forbidden[key] = found[:20]
        return self._forbidden[key]

    def tamper_reach(self) -> dict[Finding, set[str] | None]:
        """For each tampering finding: the graded functions that can run it, or None when it
        can run while the file is imported (or cannot be placed: then assume the worst)."""
        out: dict[Finding, set[str] | None] = {}
        if self._a is None:
            return out
        a = self._a
        at_import = self._closure([0])
        where: dict[Finding, set[int]] = {}
        for s in a.scopes:
            for f in s.tamper:
                where.setdefault(f, set()).add(s.index)
        for f, scopes in where.items():
            if scopes & at_import:
                out[f] = None
                continue
            fns = {fn for fn in self.api if scopes & self.reachable(fn)}
            out[f] = fns or None
        return out


def scan_source(sources: str | Sequence[str], api: Sequence[str] = ()) -> ScanResult:
    """Scan a .py file's source, or a notebook's code cells (run in order as one module).
    Sources that do not parse are left out (the grader reports their syntax errors). A source
    over the scan's budget (`budget`) gives a result that says so in `cut_short`."""
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
        analyse(analysis)
    except ScanCutShort as e:
        return ScanResult(None, api, cut_short=str(e))
    except RecursionError:
        return ScanResult(None, api, cut_short="expressions nested too deeply to analyse")
    except MemoryError:
        return ScanResult(None, api, cut_short="too large to analyse in memory")
    return ScanResult(analysis, api)
