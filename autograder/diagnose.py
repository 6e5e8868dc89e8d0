"""Naming the mistake behind a failing case, from an assignment's catalogue of known mistakes.

An assignment may point to a catalogue (`mistakes = "mistakes.py"` in `assignment.toml`): a
module defining `catalogue = Catalogue()` and registering known mistakes, each with an id, a short
name and a hint in plain words. A mistake is recognised by

* variants: the hidden reference with one or more functions replaced by a mistaken version. A
  variant of one function also explains the functions whose reference calls it (the copy of the
  reference it lives in calls the variant), so a mistake in a helper explains its callers too;
* rules (`when=`): predicates on what the student's outcome shows, built from the symptoms below
  (NaN only on large inputs, rows summing to 1 along another axis, the expected output
  transposed, no gradient, an input changed in place...). On a variant, a rule narrows it.

Everything here runs in the trusted process on plain data: the inputs the grader made, the
reference's outcome and the student's decoded outcome. It runs only for failing cases, once the
submission has made its last call to its worker (so it never uses the student's time limits), and
it names a mistake only when the evidence is unambiguous: the reference does not reproduce the
student's outcome, exactly one mistake does, and that mistake's variant agrees with every check
the student passed on the functions it replaces. Otherwise the plain mismatch message stands alone.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import torch

from .assignment import Assignment, AssignmentError, _resolve
from .checks import finite_float64, tolerance_for
from .results import diagnoses, mistake_counts  # noqa: F401 - part of this module's API
from .sandbox.execute import iter_arrays, iter_leaves, path_key, run_call
from .sandbox.protocol import roundtrip_outcome
from .fingerprint import call_digest

Predicate = Callable[["Evidence"], bool]


# ------------------------------------------------------------------ the catalogue

@dataclass
class Mistake:
    """A known mistake: how to recognise it and what to tell the student."""

    id: str
    name: str = ""
    hint: str = ""
    # Each alternative maps function names to mistaken implementations `impl(ref, *args, **kw)`,
    # `ref` being the unmodified reference module. Any alternative may match.
    alternatives: list[dict[str, Callable]] = field(default_factory=list)
    when: Predicate | None = None
    functions: tuple[str, ...] | None = None     # rules only: the functions it applies to
    questions: tuple[str, ...] | None = None

    def text(self) -> str:
        """The line shown next to a failing case."""
        return f"likely mistake: {self.name}. {self.hint}"


class Catalogue:
    """The known mistakes of one assignment; the assignment's `mistakes.py` fills it."""

    def __init__(self) -> None:
        self.mistakes: dict[str, Mistake] = {}

    def _entry(self, id: str, name: str | None, hint: str | None,
               questions: Iterable[str] | None) -> Mistake:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", id or ""):
            raise ValueError(f"mistake id {id!r}: use letters, digits and _")
        m = self.mistakes.setdefault(id, Mistake(id))
        if name:
            m.name = name.strip().rstrip(".")
        if hint:
            m.hint = hint.strip()
        if questions:
            m.questions = tuple(questions)
        return m

    def variant(self, id: str, function: str, *, name: str | None = None,
                hint: str | None = None, when: Predicate | None = None, alternative: int = 0,
                questions: Iterable[str] | None = None) -> Callable:
        """Decorator: `impl(ref, *args, **kwargs)` is `function` as this mistake computes it.

        Register several functions under one id (with the same `alternative`) for a mistake that
        spans them, e.g. a split and the merge that mirrors it; give another `alternative` number
        for another way of making the same mistake. `name` and `hint` are needed once per id.
        """
        m = self._entry(id, name, hint, questions)

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

    def describe(self, id: str, *, name: str, hint: str) -> Mistake:
        """Name a mistake whose variants are registered without a name (e.g. in a loop)."""
        return self._entry(id, name, hint, None)

    def rule(self, id: str, *, name: str, hint: str, when: Predicate,
             functions: Iterable[str] | None = None,
             questions: Iterable[str] | None = None) -> Mistake:
        """A mistake recognised from what the outcome shows, with no variant to run."""
        m = self._entry(id, name, hint, questions)
        m.when = when
        m.functions = tuple(functions) if functions else None
        return m

    def problems(self) -> list[str]:
        out = []
        for m in self.mistakes.values():
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
    return _resolve(assignment.root, assignment.root.parent.parent, rel)


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
    return {m.id: {"name": m.name, "hint": m.hint} for m in catalogue.mistakes.values()}


# ------------------------------------------------------------------ evidence and symptoms

@dataclass
class Evidence:
    """What a rule may look at: the case's inputs and both outcomes, all plain data."""

    question: str
    function: str
    args: tuple
    kwargs: dict
    expected: dict          # the reference's outcome: output, grads, upstream...
    got: dict               # the student's outcome: status, output, grads, grad_error, error...
    large_inputs: bool
    tolerance: dict

    def pairs(self) -> list[tuple[torch.Tensor, Any]]:
        """(expected tensor, the student's value at the same place or None) for each output."""
        out = []
        for path, e in iter_leaves(self.expected.get("output")):
            g = self.got.get("output")
            try:
                for p in path:
                    g = g[p]
            except (KeyError, IndexError, TypeError):
                g = None
            out.append((e, g))
        return out

    def item(self, item: int | None) -> tuple[Any, Any]:
        e, g = self.expected.get("output"), self.got.get("output")
        if item is None:
            return e, g
        try:
            return e[item], g[item]
        except (KeyError, IndexError, TypeError):
            return e, None


def _is_zero(g: Any) -> bool:
    if g is None:
        return True
    if not isinstance(g, torch.Tensor) or g.numel() == 0:
        return False
    x = finite_float64(g) if g.is_floating_point() else None
    if x is not None:       # the cached copy, compared many times over
        return not x.any()
    return not bool(g.ne(0).any())


INF = float("inf")
# A variant explains a student's outcome when it is within the question's tolerances of it, or
# at least this many times closer to it than the reference is: float64 tolerances are strict
# enough to flag a float32 round trip, so two ways of writing the same mistake (a fill of -1e-9
# or of 0) differ by more than they allow, yet by far less than the mistake itself.
CLOSER = 1e-3


def _tensor_distance(a: torch.Tensor, b: torch.Tensor, tolerance: dict | None) -> float:
    """How many tolerances apart `b` is from the trusted `a` at worst (inf: not comparable)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return INF
    if not a.is_floating_point():
        return 0.0 if bool(torch.equal(a, b)) else INF
    if a.numel() == 0:
        return 0.0
    xa, xb = finite_float64(a), finite_float64(b)
    rtol, atol = tolerance_for(a.dtype, tolerance)
    if xa is not None and xb is not None and atol > 0:
        # The common case, both finite: in NumPy, whose small-array operations cost far less
        # than torch's, on float64 copies made once per tensor.
        return float((np.abs(xa - xb) / (atol + rtol * np.abs(xa))).max())
    a64, b64 = a.double(), b.double()
    ratio = (a64 - b64).abs() / (atol + rtol * a64.abs())
    undefined = torch.isnan(ratio)      # a NaN or an infinity on either side (or 0/0)
    if bool(undefined.any()):
        same = (a64 == b64) | (torch.isnan(a64) & torch.isnan(b64))
        if not bool(same[undefined].all()):
            return INF
        ratio = ratio.masked_fill(undefined, 0.0)
    return float(ratio.max())


def _value_distance(a: Any, b: Any, tolerance: dict | None, limit: float = INF) -> float:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            a, b = torch.from_numpy(a), torch.from_numpy(b)
        except TypeError:
            return INF
    if isinstance(a, torch.Tensor):
        return _tensor_distance(a, b, tolerance) if isinstance(b, torch.Tensor) else INF
    if isinstance(a, (tuple, list)):
        if not (isinstance(b, (tuple, list)) and isinstance(a, tuple) == isinstance(b, tuple)
                and len(a) == len(b)):
            return INF
        worst = 0.0
        for x, y in zip(a, b):
            worst = max(worst, _value_distance(x, y, tolerance, limit))
            if worst > limit:
                break
        return worst
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return INF
        worst = 0.0
        for k in a:
            worst = max(worst, _value_distance(a[k], b[k], tolerance, limit))
            if worst > limit:
                break
        return worst
    if a is None or isinstance(a, (bool, int, float, str)):
        return 0.0 if type(a) is type(b) and a == b else INF
    return INF


def _values_match(a: Any, b: Any, tolerance: dict | None) -> bool:
    return _value_distance(a, b, tolerance) <= 1.0


def _close(a: torch.Tensor, b: torch.Tensor, tolerance: dict | None) -> bool:
    return _tensor_distance(a, b, tolerance) <= 1.0


def _grad_distance(a: dict, b: dict, tolerance: dict | None, limit: float = INF) -> float:
    if a.get("grad_error") or b.get("grad_error"):
        return 0.0 if a.get("grad_error") == b.get("grad_error") else INF
    ga, gb = a.get("grads"), b.get("grads")
    if ga is None or gb is None:
        return 0.0 if ga is None and gb is None else INF
    worst = 0.0
    for key in set(ga) | set(gb):
        x, y = ga.get(key), gb.get(key)
        if _is_zero(x) and _is_zero(y):
            continue
        if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) \
                or x.shape != y.shape:
            return INF
        if y.dtype != x.dtype:
            y = y.to(x.dtype)
        worst = max(worst, _tensor_distance(x, y, tolerance))
        if worst > limit:
            break
    return worst


def distance(a: dict, b: dict, tolerance: dict | None = None, limit: float = INF,
             grads: bool = True) -> float:
    """How far outcome `b` is from the trusted outcome `a` of the same call, in tolerances:
    the worst over output and gradients; inf when they differ in kind (structure, shape, dtype,
    NaN or infinities, changed inputs, forbidden calls, the error raised). Stops early, with
    some value above `limit`, once it is clearly beyond it."""
    if a.get("status") != b.get("status"):
        return INF
    if a.get("status") != "ok":
        ea, eb = a.get("error") or {}, b.get("error") or {}
        same = ea.get("type") == eb.get("type") and ea.get("message") == eb.get("message")
        return 0.0 if same else INF
    if sorted(a.get("mutated") or []) != sorted(b.get("mutated") or []):
        return INF
    if bool(a.get("forbidden")) != bool(b.get("forbidden")):
        return INF
    d = _value_distance(a.get("output"), b.get("output"), tolerance, limit)
    if d > limit or not grads:
        return d
    return max(d, _grad_distance(a, b, tolerance, limit))


def outcomes_match(a: dict, b: dict, tolerance: dict | None = None) -> bool:
    """Do two outcomes of the same call agree within the tolerances?"""
    return distance(a, b, tolerance) <= 1.0


def explains(variant: dict, got: dict, reference: dict, tolerance: dict | None = None,
             far: float | None = None, grads: bool = True) -> bool:
    """Does the variant's outcome account for the student's, far better than the reference?

    `far` is the reference's distance to the student's outcome, if already known. When it is
    inf (the reference differs in kind), only a variant within tolerance explains the outcome.
    """
    if far is None:
        far = distance(reference, got, tolerance)
    limit = max(1.0, CLOSER * far) if far < INF else 1.0
    return distance(variant, got, tolerance, limit, grads) <= limit


# Symptoms: predicates on the evidence, for `when=` in a catalogue. Generic, not tied to any
# assignment; combine them with all_of / any_of / not_.

def output_matches_reference(ev: Evidence) -> bool:
    """The output is right (gradients, changed inputs or calls are what fails)."""
    return ev.got.get("status") == "ok" and \
        _values_match(ev.expected.get("output"), ev.got.get("output"), ev.tolerance)


def gradient_cut(ev: Evidence) -> bool:
    """The output is right but no (or an all-zero) gradient reaches an input that needs one.

    Not when that input equals another one (attention of x with itself): there, using the
    wrong input gives the right values and no gradient too.
    """
    if not output_matches_reference(ev):
        return False
    inputs = {path_key(p): t for p, t in iter_leaves((tuple(ev.args), dict(ev.kwargs)))}

    def aliased(key: str) -> bool:
        t = inputs.get(key)
        return t is None or any(k != key and u.shape == t.shape and u.dtype == t.dtype
                                and bool(torch.equal(u, t)) for k, u in inputs.items())

    if ev.got.get("grad_error") == "detached":
        return not any(aliased(k) for k, t in inputs.items() if t.is_floating_point())
    expected, got = ev.expected.get("grads"), ev.got.get("grads")
    if not expected or got is None:
        return False
    return any(not _is_zero(e) and _is_zero(got.get(k)) and not aliased(k)
               for k, e in expected.items())


def changed_input(ev: Evidence) -> bool:
    """An input was modified in place, or autograd complained about an in-place operation."""
    if ev.got.get("mutated"):
        return True
    text = f"{(ev.got.get('error') or {}).get('message') or ''} {ev.got.get('grad_error') or ''}"
    return "in-place" in text or "inplace" in text


def lowered_precision(ev: Evidence) -> bool:
    """A float64 result came back in a lower floating-point precision."""
    return any(e.dtype == torch.float64 and isinstance(g, torch.Tensor) and g.is_floating_point()
               and g.dtype != torch.float64 for e, g in ev.pairs())


def mixed_precision_error(ev: Evidence) -> bool:
    """The call failed because float32 and float64 tensors met (e.g. in a matmul)."""
    message = str((ev.got.get("error") or {}).get("message") or "").lower()
    return ev.got.get("status") == "error" and "double" in message and "float" in message


def forbidden_call(ev: Evidence) -> bool:
    """The student called a library function the question forbids."""
    return bool(ev.got.get("forbidden"))


def non_finite_where_expected_finite(ev: Evidence) -> bool:
    for e, g in ev.pairs():
        if isinstance(g, torch.Tensor) and g.shape == e.shape and g.is_floating_point() \
                and e.is_floating_point():
            if bool((~torch.isfinite(g) & torch.isfinite(e)).any()):
                return True
    return False


def nan_only_on_large_inputs(ev: Evidence) -> bool:
    """NaN or inf where the reference is finite, in a case with deliberately large inputs."""
    return ev.large_inputs and non_finite_where_expected_finite(ev)


def sums_to_one_along(dim: int, item: int | None = None, tol: float = 1e-3) -> Predicate:
    """The (item of the) output sums to 1 along `dim`, wherever the sums are finite."""
    def check(ev: Evidence) -> bool:
        _, g = ev.item(item)
        if not isinstance(g, torch.Tensor) or not g.is_floating_point() or g.ndim == 0:
            return False
        try:
            sums = g.double().sum(dim=dim)
        except (IndexError, RuntimeError):
            return False
        finite = torch.isfinite(sums)
        return bool(finite.any()) and bool(((sums[finite] - 1).abs() <= tol).all())

    return check


def equals_expected_transposed(item: int | None = None) -> Predicate:
    """The (item of the) output is the expected one with its last two dimensions swapped."""
    def check(ev: Evidence) -> bool:
        e, g = ev.item(item)
        if not isinstance(e, torch.Tensor) or not isinstance(g, torch.Tensor) or e.ndim < 2:
            return False
        t = e.transpose(-2, -1)
        return _close(t, g, ev.tolerance) and not _close(e, g, ev.tolerance)

    return check


def values_right_dtype_wrong(ev: Evidence) -> bool:
    """Every value is right but some result has another dtype (e.g. 0/1 floats for bools)."""
    pairs = ev.pairs()
    if not pairs or not any(isinstance(g, torch.Tensor) and g.dtype != e.dtype for e, g in pairs):
        return False
    for e, g in pairs:
        if not isinstance(g, torch.Tensor) or g.shape != e.shape:
            return False
        if not _close(e.double(), g.double(), None):
            return False
    return True


def expected_dtype(name: str) -> Predicate:
    """Some expected result has this dtype ("bool", "float64"...)."""
    return lambda ev: any(str(e.dtype).replace("torch.", "") == name for e, _ in ev.pairs())


def raised(*words: str) -> Predicate:
    """The student's call raised an error whose message contains all these words."""
    def check(ev: Evidence) -> bool:
        message = str((ev.got.get("error") or {}).get("message") or "").lower()
        return ev.got.get("status") == "error" and all(w.lower() in message for w in words)

    return check


def all_of(*predicates: Predicate) -> Predicate:
    return lambda ev: all(p(ev) for p in predicates)


def any_of(*predicates: Predicate) -> Predicate:
    return lambda ev: any(p(ev) for p in predicates)


def not_(predicate: Predicate) -> Predicate:
    return lambda ev: not predicate(ev)


# ------------------------------------------------------------------ running variants

@dataclass
class CheckRecord:
    """One `Question.check` call: its inputs, the reference's and the student's outcomes."""

    assignment: Assignment
    question: str
    function: str
    args: tuple
    kwargs: dict
    expected: dict
    got: dict
    seed: int
    want_grad: bool
    large_inputs: bool
    tolerance: dict
    _key: bytes | None = None
    _far: float | None = None

    @property
    def far(self) -> float:
        """The reference's distance to the student's outcome, in tolerances."""
        if self._far is None:
            self._far = distance(self.expected, self.got, self.tolerance)
        return self._far

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = call_digest(self.function, self.seed, self.want_grad, self.args,
                                    self.kwargs)
        return self._key

    def evidence(self) -> Evidence:
        return Evidence(self.question, self.function, self.args, self.kwargs, self.expected,
                        self.got, self.large_inputs, self.tolerance)


@functools.lru_cache(maxsize=None)
def _reference_code(path: str) -> tuple[types.CodeType, dict[str, frozenset[str]]]:
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


class _Runner:
    """Runs a catalogue's variants on recorded inputs, caching outcomes across submissions."""

    _modules: dict[tuple, types.ModuleType] = {}
    _outcomes: dict[tuple, dict] = {}
    errors: dict[tuple[str, str], str] = {}     # (mistake, function) -> an error a variant raised

    def __init__(self, assignment: Assignment, catalogue: Catalogue):
        if assignment.reference_path is None:
            raise AssignmentError("the hidden reference implementation is not available here")
        self.catalogue = catalogue
        self.reference = assignment.load_reference()
        self.path = str(assignment.reference_path)
        self.code, self.calls = _reference_code(self.path)

    def affects(self, alternative: dict[str, Callable], function: str) -> bool:
        return bool(set(alternative) & self.calls.get(function, {function}))

    def _module(self, mistake: Mistake, index: int) -> types.ModuleType:
        key = (self.path, id(self.catalogue), mistake.id, index)
        with _lock:
            module = self._modules.get(key)
        if module is None:
            module = types.ModuleType(f"_reference_with_{mistake.id}_{index}")
            module.__file__ = self.path
            exec(self.code, module.__dict__)
            for name, impl in mistake.alternatives[index].items():
                module.__dict__[name] = functools.partial(impl, self.reference)
            with _lock:
                module = self._modules.setdefault(key, module)
        return module

    def outcome(self, mistake: Mistake, index: int, record: CheckRecord,
                grads: bool = True) -> dict | None:
        """The variant's outcome on the record's inputs (with gradients if the check asked
        for them and `grads`); computed once per grading process."""
        grads = grads and record.want_grad
        key = (self.path, id(self.catalogue), mistake.id, index, record.key, grads)
        with _lock:
            cached = self._outcomes.get(key)
        if cached is None:
            fn = getattr(self._module(mistake, index), record.function, None)
            if fn is None:
                return None
            raw = run_call(fn, record.args, record.kwargs,
                           upstream=record.expected.get("upstream"), want_grad=grads)
            cached = roundtrip_outcome(raw)
            if cached["status"] != "ok":
                err = cached.get("error") or {}
                self.errors[(mistake.id, record.function)] = \
                    f"{err.get('type')}: {err.get('message')}"
            with _lock:
                cached = self._outcomes.setdefault(key, cached)
        return cached

    def explains(self, mistake: Mistake, index: int, record: CheckRecord,
                 output_explains: bool | None = None) -> bool:
        """Does the variant account for the student's outcome of this check? Its gradients
        (a backward pass, most of a variant's cost) are computed only for a variant whose
        output already does. `output_explains`: that first stage, if already judged."""
        if output_explains is False:
            return False
        out = self.outcome(mistake, index, record, grads=False)
        if out is None:
            return False
        if output_explains:
            if not record.want_grad:
                return True
            out = self.outcome(mistake, index, record)
            return out is not None and explains(out, record.got, record.expected,
                                                record.tolerance, record.far)
        # Without gradients, inputs do not require grad: an in-place change that fails with
        # them succeeds without. A different status says nothing yet; the full run decides.
        if not (record.want_grad and out["status"] != record.got.get("status")):
            if not explains(out, record.got, record.expected, record.tolerance, record.far,
                            grads=False):
                return False
            if not record.want_grad:
                return True
        out = self.outcome(mistake, index, record)
        return out is not None and explains(out, record.got, record.expected, record.tolerance,
                                            record.far)

    def outputs_explain(self, candidates: list[tuple[Mistake, int]],
                        record: CheckRecord) -> dict[tuple[str, int], bool | None]:
        """The first stage of `explains` for many variants at once: {(mistake id, index):
        whether the variant's output explains the student's}, for the variants whose outputs
        are plain finite tensors shaped like the student's; the others are left to `explains`.

        The variants' outputs on one check are stacked once per grading process, so a
        submission costs one array operation per returned tensor instead of one comparison per
        variant (most candidates are far off: each is a different mistake)."""
        got = record.got
        leaves = _finite_leaves(got.get("output"))
        if got.get("status") != "ok" or leaves is None or not leaves:
            return {}
        far = record.far
        limit = max(1.0, CLOSER * far) if far < INF else 1.0
        stacked = self._stacked(candidates, record, [(p, t.shape, t.dtype) for p, t in leaves])
        if stacked is None:
            return {}
        ids, stacks = stacked
        worst = np.zeros(len(ids))
        for (path, student), (values, weights) in zip(leaves, stacks):
            x = finite_float64(student)
            worst = np.maximum(worst, (np.abs(values - x.reshape(-1)) / weights).max(axis=1))
        return {key: bool(d <= limit) for key, d in zip(ids, worst)}

    _stacks: dict[tuple, Any] = {}

    def _stacked(self, candidates, record: CheckRecord, layout: list) -> tuple | None:
        """(variant keys, [(values V x n, tolerances V x n) per returned tensor]) for the
        candidates whose forward outcome is ok, unchanged inputs as the student's, no forbidden
        call, and outputs of this layout, all finite. Cached per check and layout."""
        got = record.got
        key = (record.key, tuple((p, tuple(shape), str(dtype)) for p, shape, dtype in layout),
               tuple((m.id, i) for m, i in candidates), tuple(sorted(got.get("mutated") or [])),
               bool(got.get("forbidden")))
        with _lock:
            hit = self._stacks.get(key)
        if hit is not None:
            return hit if hit != () else None
        ids, columns = [], [[] for _ in layout]
        for m, i in candidates:
            out = self.outcome(m, i, record, grads=False)
            if out is None or out.get("status") != "ok" \
                    or sorted(out.get("mutated") or []) != sorted(got.get("mutated") or []) \
                    or bool(out.get("forbidden")) != bool(got.get("forbidden")):
                continue
            mine = _finite_leaves(out.get("output"))
            if mine is None or [(p, t.shape, t.dtype) for p, t in mine] != layout:
                continue
            ids.append((m.id, i))
            for column, (_, t) in zip(columns, mine):
                column.append(t)
        result: Any = ()
        if ids:
            stacks = []
            for column in columns:
                rtol, atol = tolerance_for(column[0].dtype, record.tolerance)
                if atol <= 0:      # 0/0 where both are 0: the full comparison handles that
                    stacks = None
                    break
                values = np.stack([finite_float64(t).reshape(-1) for t in column])
                stacks.append((values, atol + rtol * np.abs(values)))
            result = (ids, stacks) if stacks is not None else ()
        with _lock:
            self._stacks[key] = result
        return result if result != () else None

    def consistent(self, mistake: Mistake, index: int,
                   passed: dict[str, list[CheckRecord]]) -> bool:
        """The variant agrees with every check the student passed on a function it replaces."""
        return all(self.explains(mistake, index, record)
                   for function in mistake.alternatives[index]
                   for record in passed.get(function, []))


def _finite_leaves(output: Any) -> list[tuple[tuple, torch.Tensor]] | None:
    """The floating-point tensors of an output (a tensor or a tuple/list of them), all finite;
    None for any other output (the full comparison judges those)."""
    items = list(output) if isinstance(output, (tuple, list)) else [output]
    leaves = []
    for i, t in enumerate(items):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0 \
                or finite_float64(t) is None:
            return None
        leaves.append(((i,) if isinstance(output, (tuple, list)) else (), t))
    if isinstance(output, (tuple, list)):
        leaves = [((type(output).__name__,) + p, t) for p, t in leaves]
    return leaves


def _holds(predicate: Predicate, ev: Evidence) -> bool:
    try:
        return bool(predicate(ev))
    except Exception:  # noqa: BLE001 - a rule that cannot judge this outcome does not match
        return False


def find_matches(runner: _Runner, record: CheckRecord,
                 passed: dict[str, list[CheckRecord]] | None = None) -> list[Mistake]:
    """Every known mistake that explains this failing check (the caller wants exactly one)."""
    got = record.got
    if got.get("status") in ("not_implemented", "memory"):
        return []
    if record.far <= 1.0:
        return []       # the reference itself reproduces this outcome: nothing to name
    passed = passed or {}
    ev = record.evidence()
    mistakes = [m for m in runner.catalogue.mistakes.values()
                if not m.questions or record.question in m.questions]
    candidates = [(m, i) for m in mistakes for i, alt in enumerate(m.alternatives)
                  if runner.affects(alt, record.function)]
    first = runner.outputs_explain(candidates, record) if len(candidates) > 1 else {}
    found = []
    for m in mistakes:
        if m.alternatives:
            if not any(runner.affects(alt, record.function)
                       and runner.explains(m, i, record, first.get((m.id, i)))
                       and runner.consistent(m, i, passed)
                       for i, alt in enumerate(m.alternatives)):
                continue
        elif m.functions is not None and record.function not in m.functions:
            continue
        if m.when is not None and not _holds(m.when, ev):
            continue
        found.append(m)
    return found


# ------------------------------------------------------------------ one submission

_state = threading.local()
_warned: set[str] = set()


class Session:
    """Collects one submission's checks while it is graded; `apply` names the mistakes."""

    def __init__(self, assignment: Assignment):
        self.assignment = assignment
        self.passed: dict[str, list[CheckRecord]] = {}
        self.failed: list[tuple[CheckRecord, Any]] = []
        self.kept_bytes = 0     # of the student's outcomes held in the records above

    def __enter__(self) -> "Session":
        self._previous = getattr(_state, "session", None)
        _state.session = self
        return self

    def __exit__(self, *exc) -> None:
        _state.session = self._previous

    def apply(self) -> None:
        """Set `diagnosis` and `hint` on each failing case whose mistake is unambiguous."""
        if not self.failed:
            return
        try:
            catalogue = catalogue_for(self.assignment)
            if catalogue is None:
                return
            runner = _Runner(self.assignment, catalogue)
        except (AssignmentError, OSError, SyntaxError) as e:
            message = str(e)
            if "not available" not in message and message not in _warned:
                _warned.add(message)
                print(f"autograder: diagnosis disabled: {message}", file=sys.stderr)
            return
        for record, case in self.failed:
            try:
                found = find_matches(runner, record, self.passed)
            except Exception as e:  # noqa: BLE001 - never let diagnosis change a grade
                key = f"{type(e).__name__}: {e}"
                if key not in _warned:
                    _warned.add(key)
                    print(f"autograder: diagnosis of {record.function} failed: {key}",
                          file=sys.stderr)
                continue
            if len(found) == 1:
                case.diagnosis = [found[0].id]
                case.hint = found[0].text()


# What one submission's records may hold of the student's outcomes, whatever they return: a
# record is kept if its outcome is at most RECORD_FACTOR times the reference's (or
# RECORD_FLOOR), while the submission's total stays within KEPT_BYTES. Honest outcomes are tens
# of kilobytes; a case whose record is not kept simply gets no named mistake.
RECORD_FACTOR = 4
RECORD_FLOOR = 2**20
KEPT_BYTES = 64 * 2**20


def outcome_bytes(outcome: dict) -> int:
    """Bytes of the arrays in an outcome's output and gradients."""
    return sum(a.nbytes if isinstance(a, np.ndarray) else a.numel() * a.element_size()
               for _, a in iter_arrays((outcome.get("output"), outcome.get("grads"))))


def note_check(record: CheckRecord, passed: bool, case: Any = None) -> None:
    """Called for every `Question.check`; kept only while a Session is collecting, and only
    within the memory bounds above."""
    session = getattr(_state, "session", None)
    if session is None:
        return
    size = outcome_bytes(record.got)
    if size > max(RECORD_FACTOR * outcome_bytes(record.expected), RECORD_FLOOR) \
            or session.kept_bytes + size > KEPT_BYTES:
        return
    session.kept_bytes += size
    if passed:
        session.passed.setdefault(record.function, []).append(record)
    elif case is not None:
        session.failed.append((record, case))


# ------------------------------------------------------------------ class-level figures

# ------------------------------------------------------------------ measuring it on a corpus

def read_header(path: Path) -> dict[str, str]:
    """`# key: value` lines at the top of a corpus file."""
    header = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)", line)
        if not m:
            break
        header[m.group(1)] = m.group(2).strip()
    return header


NONE = "none"     # `# diagnosis: none`: a mistake the catalogue does not know; naming any is wrong


@dataclass
class Evaluation:
    wrong: list[tuple[str, str | None, list[str]]] = field(default_factory=list)
    correct: list[tuple[str, list[str]]] = field(default_factory=list)
    variant_errors: dict[tuple[str, str], str] = field(default_factory=dict)
    failing_cases: int = 0          # failing cases of the wrong submissions (not attempted aside)
    diagnosed_cases: int = 0        # ... of which a mistake is named

    @staticmethod
    def _right(want: str | None, got: list[str]) -> bool:
        return not got if want == NONE else bool(want) and want in got

    @staticmethod
    def _wrong(want: str | None, got: list[str]) -> bool:
        return bool(set(got) - {want})

    @property
    def named_right(self) -> int:
        return sum(1 for _, want, got in self.wrong if self._right(want, got))

    @property
    def named_wrong(self) -> int:
        return sum(1 for _, want, got in self.wrong if self._wrong(want, got))

    @property
    def correct_diagnosed(self) -> int:
        return sum(1 for _, got in self.correct if got)

    def share(self, n: int) -> float:
        return n / len(self.wrong) if self.wrong else 0.0

    def meets(self, right: float = 0.9) -> bool:
        return (bool(self.wrong) and self.share(self.named_right) >= right
                and self.named_wrong == 0 and self.correct_diagnosed == 0)

    def report(self, verbose: bool = False) -> str:
        n = len(self.wrong)
        unknown = sum(1 for _, want, _ in self.wrong if want == NONE)
        lines = [
            f"wrong submissions: {n} ({unknown} with a mistake the catalogue does not know, "
            f"where naming nothing is right), correct submissions: {len(self.correct)}",
            f"  feedback names the right mistake: {self.named_right}/{n} "
            f"({100 * self.share(self.named_right):.1f}%, target >= 90%)",
            f"  feedback names a wrong mistake:   {self.named_wrong}/{n} "
            f"({100 * self.share(self.named_wrong):.1f}%, target 0%)",
            f"  correct submissions with a diagnosis: {self.correct_diagnosed}/"
            f"{len(self.correct)} (target 0)",
            f"  failing cases of wrong submissions with a diagnosis: {self.diagnosed_cases}/"
            f"{self.failing_cases}",
        ]
        rows = [(p, w, g, self._right(w, g) and not self._wrong(w, g)) for p, w, g in self.wrong]
        if verbose or not all(ok for *_, ok in rows):
            lines += ["", "per submission:" if verbose else "not as expected:"]
            for p, w, g, ok in rows:
                if verbose or not ok:
                    lines.append(f"  {'ok  ' if ok else 'MISS'} {p}: expected "
                                 f"{w or '(no # diagnosis: header)'}, named "
                                 f"{', '.join(sorted(g)) or 'nothing'}")
            for p, g in self.correct:
                if g or verbose:
                    lines.append(f"  {'ok  ' if not g else 'MISS'} {p}: correct, named "
                                 f"{', '.join(sorted(g)) or 'nothing'}")
        return "\n".join(lines)


def evaluate(corpus: Path, grade: Callable[[Path], Any]) -> Evaluation:
    """Grade `corpus/wrong/*.py` and `corpus/correct/*.py`; compare with `# diagnosis:`."""
    corpus = Path(corpus)
    ev = Evaluation()
    for path in sorted((corpus / "wrong").glob("*.py")):
        want = read_header(path).get("diagnosis") or None
        result = grade(path)
        ev.wrong.append((path.name, want, sorted(diagnoses(result))))
        for q in result.questions.values():
            for c in q.cases:
                if c.status not in ("passed", "not_attempted"):
                    ev.failing_cases += 1
                    ev.diagnosed_cases += bool(c.diagnosis)
    for path in sorted((corpus / "correct").glob("*.py")):
        ev.correct.append((path.name, sorted(diagnoses(grade(path)))))
    ev.variant_errors = dict(_Runner.errors)
    return ev
