"""What computes each forbidden routine: an assignment's table of routines, as plain data.

An assignment names the library routines its questions may forbid in `assignment.toml`
(`[routines.<id>]`): the routine's entry points (`names`: torch functions, methods and modules,
`autograd.<Node>` names, NumPy/SciPy functions, `aten::<op>`), the aten operators that compute
it forward and backward (`aten`), the routines that compute it too (`includes`: an attention
kernel computes a softmax), the operations library code must combine to compute it
(`signature`: one operator of each group, see `observe.py`), other words a library name of it
may use (`also_named`, for the source scan) and, optionally, how a refusal explains it
(`explain`). A question forbids routines by id or by any of their names; a name no routine
lists still gets what can be derived from torch (`derive`).

The engine itself lists no routine: this module turns the table into what the sandboxed worker
refuses (`Table.plan`), what lint reports and what the trusted side compares.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

TORCH_PREFIXES = ("torch.", "autograd.")
ATEN_PREFIXES = ("aten::", "torch.ops.aten.")
KEYS = ("names", "aten", "includes", "signature", "also_named", "explain")


class RoutineError(ValueError):
    """A malformed `[routines]` table (an author's mistake, said in their words)."""


@dataclass(frozen=True)
class Routine:
    id: str
    names: tuple[str, ...] = ()
    aten: tuple[str, ...] = ()
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
            tuple(bare_op(o) for o in _strings(spec.get("aten", []), f"{where} aten")),
            _strings(spec.get("includes", []), f"{where} includes"), groups,
            _strings(spec.get("also_named", []), f"{where} also_named"), explain)
    for r in routines.values():
        missing = [i for i in r.includes if i not in routines]
        if missing:
            raise RoutineError(f"[routines.{r.id}] includes unknown routines "
                               f"{', '.join(missing)}")
    return routines


def bare_op(name: str) -> str:
    """`aten::_softmax`, `torch.ops.aten._softmax.default` or `_softmax` -> `_softmax` (an
    overload name is kept: `_softmax.out`; `.default` means the operator itself)."""
    for prefix in ATEN_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name[: -len(".default")] if name.endswith(".default") else name


def is_op_name(name: str) -> bool:
    return name.startswith(ATEN_PREFIXES)


def is_python_name(name: str) -> bool:
    """A dotted name outside torch (`scipy.special.softmax`, `numpy.logaddexp`): refused where
    the function itself is, since it has no dispatcher."""
    return "." in name and not name.startswith(TORCH_PREFIXES) and not is_op_name(name)


@dataclass
class Plan:
    """What refusing one forbidden name takes in a worker: plain data, sent to the fork server."""
    ops: list[str] = field(default_factory=list)          # aten operators (or overloads)
    python: list[str] = field(default_factory=list)       # dotted names refused where they are
    # Library code computing it: each signature a list of groups of operators.
    signatures: list[list[list[str]]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"ops": list(self.ops), "python": list(self.python),
                "signatures": [[list(g) for g in s] for s in self.signatures]}

    @classmethod
    def from_json(cls, data: Mapping) -> "Plan":
        return cls([str(o) for o in data.get("ops", [])],
                   [str(p) for p in data.get("python", [])],
                   [[[str(o) for o in g] for g in s] for s in data.get("signatures", [])])


class Table:
    """An assignment's routines, and what each forbidden entry of a question resolves to."""

    def __init__(self, routines: Mapping[str, Routine] | None = None):
        self.routines = dict(routines or {})
        self._by_name: dict[str, Routine] = {}
        for r in self.routines.values():
            for n in r.names:
                self._by_name.setdefault(n, r)
        self._plans: dict[str, Plan] = {}

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

    def ops(self, entry: str) -> list[str]:
        return self.plan(entry).ops

    def plan(self, entry: str) -> Plan:
        """What refusing `entry` takes (declared, else derived from the installed torch)."""
        if entry not in self._plans:
            self._plans[entry] = self._plan(entry)
        return self._plans[entry]

    def _plan(self, entry: str) -> Plan:
        routine = self.routine_of(entry)
        if routine is None:
            return derive(entry)
        plan = Plan()
        for r in self.with_included(routine):
            plan.ops += [o for o in r.aten if o not in plan.ops]
            signature = [list(g) for g in r.signature]
            if signature and signature not in plan.signatures:
                plan.signatures.append(signature)
        own = [n for n in routine.names if not n.startswith("autograd.")]
        if entry in own and entry.startswith("torch.") and _is_python_function(entry):
            # The entry's own Python function first: a refusal there names what was called.
            plan.python.append(entry)
        for name in own:
            if is_op_name(name):
                op = bare_op(name)
                if op not in plan.ops:
                    plan.ops.append(op)
            elif is_python_name(name):
                plan.python.append(name)
            elif not routine.aten:
                # A torch routine declared without operators: refused where its functions are,
                # and through the operators its names derive to.
                derived = derive(name)
                plan.ops += [o for o in derived.ops if o not in plan.ops]
                plan.python += [p for p in derived.python if p not in plan.python]
        return plan

    def related(self, entry: str, candidates: Iterable[str]) -> set[str]:
        """`entry` and the candidates that share an operator, a Python target or a routine with
        it: a worker that no longer refuses `entry` need not refuse those either."""
        mine = self.plan(entry)
        ops, python = set(mine.ops), set(mine.python)
        routine = self.routine_of(entry)
        out = {entry}
        for n in candidates:
            if n == entry:
                continue
            other = self.plan(n)
            if ops & set(other.ops) or python & set(other.python) or (
                    routine is not None and self.routine_of(n) is routine):
                out.add(n)
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


def _resolve(name: str) -> Any:
    """The object a dotted torch name stands for in the installed torch, or None."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module (or not installed): a shorter prefix
            continue
        try:
            for a in parts[cut:]:
                obj = getattr(obj, a)
        except AttributeError:
            return None
        return obj
    return None


def _is_python_function(name: str) -> bool:
    import types

    return isinstance(_resolve(name), types.FunctionType)


def _has_op(op: str) -> bool:
    import torch

    try:
        return bool(getattr(torch.ops.aten, op.split(".")[0]).overloads())
    except (AttributeError, RuntimeError):
        return False


def derive(name: str) -> Plan:
    """What refusing an entry no routine declares takes, from the installed torch:

    * `aten::<op>` (or `torch.ops.aten.<op>`): that operator;
    * a torch function or method implemented in C (`torch.nn.functional.linear`,
      `torch.Tensor.softmax`): the aten operator of the same name, if there is one (every
      route to it meets the dispatcher); otherwise the function where it is;
    * a torch function written in Python: that function (its code, every alias);
    * a torch module class (`torch.nn.Linear`): its `forward`;
    * anything else (`numpy.logaddexp`, `scipy.special.logsumexp`): refused where it is.
    """
    import inspect
    import types

    if name.startswith("autograd."):
        return Plan()
    if is_op_name(name):
        return Plan(ops=[bare_op(name)])
    if not name.startswith("torch."):
        return Plan(python=[name])
    obj = _resolve(name)
    if obj is None:
        return Plan()
    if isinstance(obj, type):
        import torch

        if issubclass(obj, torch.nn.Module) and isinstance(vars(obj).get("forward"),
                                                            types.FunctionType):
            return Plan(python=[f"{name}.forward"])
        return Plan()
    if isinstance(obj, types.FunctionType) or inspect.ismethod(obj):
        return Plan(python=[name])
    short = getattr(obj, "__name__", name.rsplit(".", 1)[-1])
    if _has_op(short):
        return Plan(ops=[short])
    return Plan(python=[name])


def plans(table: Table, names: Iterable[str]) -> list[dict]:
    """The plan of each name, as JSON, in order (for the fork request)."""
    return [table.plan(n).to_json() for n in names]
