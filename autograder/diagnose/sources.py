"""Where the variant engine gets a known mistake's outcome on a check's inputs: the one seam
between the instructor's grade and the student's own check.

* `ReferenceVariants` runs the mistake's variant: the hidden reference with some functions
  replaced by the catalogue's mistaken versions. Only where the reference and the catalogue are
  (the instructor's grade, `autograder snapshot`).
* `ShippedVariants` reads the outcome from the table that `autograder snapshot` recorded from
  those variants on the *public* inputs and that the student bundle ships
  (`autograder.diagnose.table`). An outcome the table does not hold is `OutcomeUnknown`: the
  case is then left without a name rather than named on partial evidence.

Everything that decides whether an outcome explains a student's (`variants`, `causes`,
`fallback`) is the same code for both, so a public case gets the same name from either source.
"""
from __future__ import annotations

import ast
import functools
import threading
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..checking.expected import quietly
from ..model.assignment import Assignment, AssignmentError
from ..sandbox.execute import run_call, with_chained_functions
from ..sandbox.protocol import decode_outcome, encode_outcome_safely, roundtrip_outcome
from .catalogue import Catalogue, Mistake
from .shared_outcomes import shared

if TYPE_CHECKING:
    from .variants import CheckRecord

_lock = threading.Lock()


class OutcomeUnknown(Exception):
    """The source cannot tell this variant's outcome (the shipped table does not hold it): the
    case gets no name, since the grade might have weighed that variant."""


Part = tuple[str, int]      # (mistake id, alternative)


def variant_parts(mistake: Mistake, index: int) -> tuple[Part, ...]:
    """The catalogue alternatives a variant is made of: one, or several for a combination the
    search for several causes built (`Mistake.parts`)."""
    return mistake.parts or ((mistake.id, index),)


def variant_key(catalogue: Catalogue, calls: dict[str, frozenset[str]], parts, function: str
                ) -> str | None:
    """The key of a variant's outcome on a call of `function`: its parts that replace a function
    `function` reaches (the others cannot change that call), sorted. None when no part does."""
    reach = calls.get(function, frozenset({function}))
    kept = []
    for mid, i in parts:
        m = catalogue.mistakes.get(mid)
        if m is None or i >= len(m.alternatives):
            return None
        if set(m.alternatives[i]) & reach:
            kept.append((mid, i))
    return "+".join(f"{mid}.{i}" for mid, i in sorted(set(kept))) or None


class VariantSource(Protocol):
    """What the engine needs of a source: the reference's call graph ({function: the functions
    it reaches, itself included}), a key for its caches, and a variant's outcome."""

    calls: dict[str, frozenset[str]]
    key: str

    def compute(self, mistake: Mistake, index: int, record: "CheckRecord", grads: bool
                ) -> dict | None: ...


@functools.lru_cache(maxsize=None)
def reference_code(path: str) -> tuple[types.CodeType, dict[str, frozenset[str]]]:
    """The reference compiled once, and for each of its functions the functions it calls."""
    source = Path(path).read_text()
    tree = ast.parse(source)
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    direct = {name: {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and x.id in top}
              for name, node in top.items()}
    calls = {}
    for name in top:
        seen, todo = set(), [name]
        while todo:
            for callee in direct[todo.pop()]:
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        calls[name] = frozenset(seen | {name})
    return compile(source, path, "exec"), calls


class _Ref:
    """What a mistaken implementation sees as `ref`: the reference's version of each function
    it replaces (so that `ref.f` inside the variant of `f` is the right `f`), and the variant
    module's version of every other function, so that a mistake in a helper, replaced in the
    same module (a combination of causes), reaches the callers that the variant computes."""

    def __init__(self, module: types.ModuleType, reference: types.ModuleType,
                 replaced: frozenset[str]):
        self._module, self._reference, self._replaced = module, reference, replaced

    def __getattr__(self, name: str) -> Any:
        if name in self._replaced:
            return getattr(self._reference, name)
        return getattr(self._module, name)


class ReferenceVariants:
    """Runs variants: a copy of the reference module per variant, with the replaced functions
    set to the catalogue's implementations (modules cached per grading process)."""

    _modules: dict[tuple, types.ModuleType] = {}

    def __init__(self, assignment: Assignment, catalogue: Catalogue):
        if assignment.reference_path is None:
            raise AssignmentError("the hidden reference implementation is not available here")
        self.catalogue = catalogue
        self.reference = assignment.load_reference()
        self.key = str(assignment.reference_path)
        self.code, self.calls = reference_code(self.key)

    def _module(self, mistake: Mistake, index: int) -> types.ModuleType:
        key = (self.key, id(self.catalogue), mistake.id, index)
        with _lock:
            module = self._modules.get(key)
        if module is None:
            module = types.ModuleType(f"_reference_with_{mistake.id}_{index}")
            module.__file__ = self.key
            exec(self.code, module.__dict__)
            replaced = mistake.alternatives[index]
            ref = _Ref(module, self.reference, frozenset(replaced))
            for name, impl in replaced.items():
                module.__dict__[name] = functools.partial(impl, ref)
            with _lock:
                module = self._modules.setdefault(key, module)
        return module

    def helper_outcome(self, function: str, args: tuple, kwargs: dict) -> dict:
        """The reference's own `function` on these inputs, without gradients: what a correct
        helper returns where a student's function called theirs (`stand_ins`)."""
        fn = getattr(self.reference, function, None)
        if fn is None:
            return {"status": "error", "error": {"type": "AttributeError",
                                                 "message": f"no {function}"}}
        with quietly():
            raw = run_call(fn, args, kwargs, want_grad=False)
        return roundtrip_outcome(raw)

    def compute(self, mistake: Mistake, index: int, record: "CheckRecord", grads: bool
                ) -> dict | None:
        module = self._module(mistake, index)
        fn = getattr(module, record.function, None)
        if fn is None:
            return None
        share = shared()
        key = (self.key, mistake.id, index, record.key, grads)
        if share is not None:
            # Another grading process of the run may have computed it already.
            known = share.get(key)
            if known is not None:
                return known
        # An input the student's own function made (a chained call) is made by the variant's.
        args, kwargs = with_chained_functions(record.args, record.kwargs,
                                              lambda name: getattr(module, name, None))
        with quietly():   # a variant is the reference's code: its warnings quote it
            raw = run_call(fn, args, kwargs,
                           upstream=record.expected.get("upstream"), want_grad=grads)
        buffers: list[bytes] = []
        node = encode_outcome_safely(raw, buffers, "")
        if share is not None:
            share.add(key, node, buffers)
        return decode_outcome(node, buffers)


class ShippedVariants:
    """Variant outcomes from a recorded table (`autograder.diagnose.table.MistakeTable`)."""

    def __init__(self, table: Any):
        self.table = table
        self.catalogue = table.catalogue
        self.calls = table.calls
        self.key = f"table:{table.source}"

    def compute(self, mistake: Mistake, index: int, record: "CheckRecord", grads: bool
                ) -> dict | None:
        key = variant_key(self.catalogue, self.calls, variant_parts(mistake, index),
                          record.function)
        outcome = None if key is None else self.table.outcome(record.key, key, grads)
        if outcome is None:
            raise OutcomeUnknown(f"{key or mistake.id} on {record.function}")
        return outcome
