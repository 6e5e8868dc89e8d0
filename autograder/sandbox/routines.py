"""What refusing each forbidden routine takes in a worker: plans, as plain data.

An assignment declares its routines in `assignment.toml` (`[routines]`, read and checked by
`autograder.model.routines`); a question forbids routines by id or by any of their names. This
module turns a forbidden entry into what the sandboxed worker refuses (`Table.plan`): the aten
operators, the Python-level targets and the signatures; a name no routine lists still gets
what can be derived from the installed torch (`derive`). The sandbox imports nothing else of
the engine, so it states here what it reads of a routine and of the table (`Routine`,
`Routines`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence

TORCH_PREFIXES = ("torch.", "autograd.")
ATEN_PREFIXES = ("aten::", "torch.ops.aten.")


class Routine(Protocol):
    """One declared routine (see `autograder.model.routines.Routine` for each field)."""

    id: str
    names: Sequence[str]
    aten: Sequence[str]
    includes: Sequence[str]
    signature: Sequence[Sequence[str]]


class Routines(Protocol):
    """The assignment's routines (`autograder.model.routines.Routines`)."""

    routines: Mapping[str, Routine]

    def routine_of(self, entry: str) -> Routine | None: ...

    def with_included(self, routine: Routine) -> list[Routine]: ...

    def shown(self, entry: str) -> str: ...

    def explain(self, entry: str) -> str: ...


class _NoRoutines:
    """The table of an assignment that declares none: every entry is derived."""

    routines: Mapping[str, Any] = {}

    def routine_of(self, entry: str) -> Any:
        return None

    def with_included(self, routine: Any) -> list:
        return [routine]

    def shown(self, entry: str) -> str:
        return entry

    def explain(self, entry: str) -> str:
        return ""


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
    """What each forbidden entry of the assignment's questions resolves to in a worker."""

    def __init__(self, routines: Routines | None = None):
        self.declared = routines if routines is not None else _NoRoutines()
        self._plans: dict[str, Plan] = {}

    def ops(self, entry: str) -> list[str]:
        return self.plan(entry).ops

    def plan(self, entry: str) -> Plan:
        """What refusing `entry` takes (declared, else derived from the installed torch)."""
        if entry not in self._plans:
            self._plans[entry] = self._plan(entry)
        return self._plans[entry]

    def _plan(self, entry: str) -> Plan:
        routine = self.declared.routine_of(entry)
        if routine is None:
            return derive(entry)
        plan = Plan()
        for r in self.declared.with_included(routine):
            plan.ops += [o for o in map(bare_op, r.aten) if o not in plan.ops]
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
        routine = self.declared.routine_of(entry)
        out = {entry}
        for n in candidates:
            if n == entry:
                continue
            other = self.plan(n)
            if ops & set(other.ops) or python & set(other.python) or (
                    routine is not None and self.declared.routine_of(n) is routine):
                out.add(n)
        return out


# One table per assignment's routines, kept with them (their plans are looked up once).
_TABLES: dict[int, tuple[Any, Table]] = {}


def table_for(routines: Routines) -> Table:
    """The plans of an assignment's routines, computed once per process."""
    held = _TABLES.get(id(routines))
    if held is None or held[0] is not routines:
        held = _TABLES[id(routines)] = (routines, Table(routines))
    return held[1]


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
