"""What question files use: inputs, expected values, and `Question.check`.

A question file is an otter exception-based test file. Each `@test_case` receives the student's
functions (otter looks them up by parameter name) and calls `Question.check`. Those functions are
either real functions (otter's in-process tools, `autograder check`) or `RemoteFunction` stand-ins
that forward each call to a sandboxed worker (`autograder grade`); `check` works the same way with
both and raises `CheckFailed` with student-readable problems when the case fails.

Expected values come from the live hidden reference (hidden cases) or from a snapshot recorded
from it by `autograder snapshot` (public cases, so that students need no reference code).

Inputs may be torch tensors (`tensor`, `randn`...) or NumPy arrays (`array`, or `to_numpy` of
the same): an assignment whose functions take NumPy arrays expects NumPy arrays back, and has no
gradients to compare. Besides functions, a case may judge a plain value the student wrote, a
knowledge-check answer (`Question.check_answer`); public answers are stored as digests, so the
shipped snapshots do not print them.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from . import checks, diagnose
from .assignment import Assignment, AssignmentError, assignment_for_test_file
from .checks import CheckFailed, Labels, Problem
from .sandbox.execute import iter_arrays, run_call
from .fingerprint import call_digest
from .sandbox.protocol import roundtrip_outcome
from .sandbox.wire import Opaque, decode, encode

# Set by the grader around a run; otter's tools leave the defaults.
_state = threading.local()


def _ctx() -> dict:
    if not hasattr(_state, "ctx"):
        _state.ctx = {"record": None, "use_reference": True}
    return _state.ctx


class recording:
    """Context manager for `autograder snapshot`: public cases store the reference's outcome."""

    def __init__(self, store: dict):
        self.store = store

    def __enter__(self):
        _ctx()["record"] = self.store
        return self.store

    def __exit__(self, *exc):
        _ctx()["record"] = None


class GraderError(Exception):
    """A problem of the grader or the assignment, never the student's fault."""


# ------------------------------------------------------------------ inputs

def _dtype(name: str | torch.dtype) -> torch.dtype:
    return name if isinstance(name, torch.dtype) else getattr(torch, name)


def tensor(data, dtype: str = "float32") -> torch.Tensor:
    """A literal tensor, e.g. `tensor([1.0, 2.0, 3.0])`."""
    return torch.tensor(data, dtype=_dtype(dtype))


def array(data, dtype: str = "float32") -> np.ndarray:
    """A literal NumPy array, e.g. `array([1.0, 2.0, 3.0])`."""
    return np.array(data, dtype=np.dtype(dtype))


def to_numpy(value: Any) -> Any:
    """The same inputs as NumPy arrays: every tensor inside tuples/lists/dicts is converted
    (dtype kept), e.g. `to_numpy(randn(2, 3, seed=1))` or `to_numpy(block_params(8, 16, seed=2))`."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, (tuple, list)):
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return value


_made: dict[tuple, tuple[torch.Tensor, int]] = {}
_made_lock = threading.Lock()


def _memoized(make):
    """Every submission's question files ask for the same seeded inputs: make each once and
    hand out the same tensor, which lets the trusted caches (`fingerprint`) recognise it.
    A tensor changed in place since (its version counter moved) is made afresh."""

    def wrapper(*shape, **options):
        key = (make.__name__, shape, tuple(sorted(options.items())))
        with _made_lock:
            hit = _made.get(key)
        if hit is not None and hit[0]._version == hit[1]:
            return hit[0]
        t = make(*shape, **options)
        with _made_lock:
            _made[key] = (t, t._version)
        return t

    wrapper.__name__, wrapper.__doc__ = make.__name__, make.__doc__
    return wrapper


@_memoized
def randn(*shape: int, seed: int, dtype: str = "float32", scale: float = 1.0,
          shift: float = 0.0) -> torch.Tensor:
    """Seeded normal values (generated in this process: the student cannot influence them)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale + shift).to(_dtype(dtype))


@_memoized
def random_mask(*shape: int, seed: int, p: float = 0.3) -> torch.Tensor:
    """A seeded bool mask (True = blocked) that never blocks a whole row."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g) < p
    m[..., 0] = False
    return m


@_memoized
def future_mask(T: int) -> torch.Tensor:
    """The causal mask, built here so other questions never depend on the student's."""
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def attention_params(d_model: int, *, seed: int, dtype: str = "float32") -> dict:
    names = ["w_q", "w_k", "w_v", "w_o"]
    return {n: randn(d_model, d_model, seed=seed + i, dtype=dtype, scale=d_model ** -0.5)
            for i, n in enumerate(names)}


def block_params(d_model: int, d_ff: int, *, seed: int, dtype: str = "float32") -> dict:
    p = attention_params(d_model, seed=seed, dtype=dtype)
    p.update(
        ln1_gamma=randn(d_model, seed=seed + 10, dtype=dtype, scale=0.2, shift=1.0),
        ln1_beta=randn(d_model, seed=seed + 11, dtype=dtype, scale=0.2),
        w1=randn(d_model, d_ff, seed=seed + 12, dtype=dtype, scale=d_model ** -0.5),
        b1=randn(d_ff, seed=seed + 13, dtype=dtype, scale=0.1),
        w2=randn(d_ff, d_model, seed=seed + 14, dtype=dtype, scale=d_ff ** -0.5),
        b2=randn(d_model, seed=seed + 15, dtype=dtype, scale=0.1),
        ln2_gamma=randn(d_model, seed=seed + 16, dtype=dtype, scale=0.2, shift=1.0),
        ln2_beta=randn(d_model, seed=seed + 17, dtype=dtype, scale=0.2),
    )
    return p


def upstream_for(output: Any, seed: int) -> Any:
    """A seeded random gradient shaped like each floating-point tensor of `output`."""
    g = torch.Generator().manual_seed(seed)

    def make(value):
        if isinstance(value, torch.Tensor):
            if not value.is_floating_point():
                return None
            return torch.randn(value.shape, generator=g, dtype=torch.float64).to(value.dtype)
        if isinstance(value, tuple):
            return tuple(make(v) for v in value)
        if isinstance(value, list):
            return [make(v) for v in value]
        return None

    result = make(output)
    # No floating-point tensor anywhere (NumPy outputs, say): no gradient to ask for.
    return None if not list(iter_arrays(result)) else result


# ------------------------------------------------------------------ expected outcomes

class snapshot:
    """Expected values recorded from the reference into `snapshots/<question>.json`."""

    def __init__(self, key: str):
        self.key = key


_reference_cache: dict[tuple, dict] = {}
_cache_lock = threading.Lock()


def _reference_outcome(assignment: Assignment, fn_name: str, args, kwargs, seed: int,
                       want_grad: bool) -> dict:
    """The reference's outcome; cached, since every submission gets the same inputs."""
    key = (str(assignment.root), call_digest(fn_name, seed, want_grad, args, kwargs))
    with _cache_lock:
        cached = _reference_cache.get(key)
    if cached is None:
        cached = _compute_reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad)
        with _cache_lock:
            _reference_cache[key] = cached
    return cached


def _compute_reference_outcome(assignment: Assignment, fn_name: str, args, kwargs, seed: int,
                               want_grad: bool) -> dict:
    try:
        ref = getattr(assignment.load_reference(), fn_name)
    except (AssignmentError, AttributeError) as e:
        raise GraderError(f"reference for {fn_name} unavailable: {e}") from e
    first = run_call(ref, args, kwargs)
    if first["status"] != "ok":
        raise GraderError(f"the reference {fn_name} failed: {first['error']}")
    upstream = upstream_for(first["output"], seed) if want_grad else None
    full = run_call(ref, args, kwargs, upstream=upstream, want_grad=want_grad)
    out = roundtrip_outcome(full)
    out["upstream"] = upstream
    return out


def _snapshot_path(assignment: Assignment, question: str) -> Path:
    return assignment.snapshot_dir / f"{question}.json"


_snapshot_cache: dict[str, dict] = {}


def _load_snapshot(path: Path) -> dict:
    key = str(path)
    if key not in _snapshot_cache:
        if not path.is_file():
            raise GraderError(f"snapshot file {path.name} is missing: run `autograder snapshot`")
        _snapshot_cache[key] = json.loads(path.read_text())
    return _snapshot_cache[key]


def _same_inputs(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True)))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b)))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_inputs(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_inputs(a[k], b[k]) for k in a)
    return a == b


def _snapshot_outcome(assignment: Assignment, question: str, key: str, fn_name: str, args,
                      kwargs, seed: int, want_grad: bool) -> dict:
    store = _ctx()["record"]
    if store is not None:
        exp = _reference_outcome(assignment, fn_name, args, kwargs, seed, want_grad)
        store.setdefault(question, {})[key] = {
            "function": fn_name,
            "inputs": encode((tuple(args), dict(kwargs)), None),
            "upstream": encode(exp["upstream"], None),
            "output": encode(exp["output"], None),
            "grads": None if exp["grads"] is None else
            {k: encode(v, None) for k, v in exp["grads"].items()},
        }
        return exp
    path = _snapshot_path(assignment, question)
    digest = call_digest(fn_name, seed, want_grad, args, kwargs)
    with _cache_lock:
        hit = _decoded_snapshots.get((str(path), key))
    if hit is not None and hit[0] == digest:
        return hit[1]
    data = _load_snapshot(path).get(key)
    if data is None:
        raise GraderError(f"snapshot {question}/{key} is missing: run `autograder snapshot`")
    if data["function"] != fn_name or not _same_inputs(
            decode(data["inputs"], None), (tuple(args), dict(kwargs))):
        raise GraderError(f"snapshot {question}/{key} is stale: run `autograder snapshot`")
    grads = data.get("grads")
    outcome = {
        "status": "ok", "output": decode(data["output"], None),
        "upstream": decode(data["upstream"], None),
        "grads": None if grads is None else {k: decode(v, None) for k, v in grads.items()},
        "grad_error": None, "mutated": [], "forbidden": [], "called": [], "error": None,
    }
    with _cache_lock:
        _decoded_snapshots[(str(path), key)] = (digest, outcome)
    return outcome


# Decoded snapshot entries, with the digest of the inputs they were checked against.
_decoded_snapshots: dict[tuple[str, str], tuple[bytes, dict]] = {}


# ------------------------------------------------------------------ the question

# Every Question made, by (question file, name): lets the grader learn which forbidden names
# need tripwires before a student's module is imported (`forbidden_names`).
_registry: dict[tuple[str, str], "Question"] = {}


def questions_in(test_file: str | Path) -> list["Question"]:
    """The Question objects a loaded question file created."""
    path = os.path.realpath(str(test_file))
    return [q for (f, _), q in list(_registry.items()) if f == path]


class MissingAnswer:
    """Stands in for an answer variable the student's file does not define at all (otter
    passes None for it, which reads as "not answered yet")."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = MissingAnswer()


def _canonical(value: Any, depth: int = 0) -> Any:
    """A JSON-able form of an answer, so that equal answers written differently agree:
    numbers compare by value to 6 significant digits (4, 4.0 and np.int64(4) are one answer),
    text ignores case and surrounding spaces, tuples and lists (and 1-d arrays) are sequences.
    Raises TypeError for anything else."""
    if depth > 4:
        raise TypeError("nested too deeply")
    if isinstance(value, (bool, np.bool_)):
        return ["bool", bool(value)]
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.dtype.kind in "biuf":
        value = value.tolist()
    if isinstance(value, numbers.Real):
        try:
            x = float(value)
        except (OverflowError, ValueError):
            raise TypeError("a number too large to check") from None
        if not math.isfinite(x):
            return ["num", repr(x)]
        x = float(f"{x:.6g}")
        return ["num", int(x) if x.is_integer() and abs(x) < 2**63 else repr(x)]
    if isinstance(value, str):
        return ["str", value.strip().casefold()]
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return ["seq", [_canonical(v, depth + 1) for v in value]]
    raise TypeError(type(value).__name__)


def answer_digest(name: str, value: Any) -> str:
    """What a snapshot keeps of a public answer: a salted hash of its canonical form."""
    text = json.dumps([name, _canonical(value)], sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def answer_form(value: Any) -> str:
    """The kind of answer expected, in words that do not give the answer away."""
    c = _canonical(value)
    if c[0] == "bool":
        return "True or False"
    if c[0] == "num":
        return "a number"
    if c[0] == "str":
        return "a short text (a str)"
    items = c[1]
    if items and all(i[0] == "num" for i in items):
        return f"a tuple of {len(items)} numbers"
    return f"a tuple of {len(items)} items"


def _form_of_canonical(c: Any) -> str:
    try:
        return answer_form(_from_canonical(c))
    except TypeError:
        return "?"


def _from_canonical(c: Any) -> Any:
    kind, v = c
    if kind == "bool":
        return v
    if kind == "num":
        return v if isinstance(v, int) else float(v)
    if kind == "str":
        return v
    return tuple(_from_canonical(i) for i in v)


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, np.ndarray) else \
        f"array({value.tolist()!r})" if value.size <= 16 else f"an array of shape {value.shape}"
    return text if len(text) <= 80 else text[:77] + "..."


class Question:
    """One question of an assignment: its forbidden library calls, tolerances, and `check`."""

    def __init__(self, name: str, *, forbidden: Sequence[str] = (),
                 tolerance: dict | None = None, assignment: Assignment | None = None):
        self.name = name
        self.forbidden = list(forbidden)
        self.tolerance = tolerance or {}
        # otter executes question files with `compile(source, path)`: the caller's code object
        # knows the file even where `__file__` is not set.
        self._file = sys._getframe(1).f_code.co_filename
        self._assignment = assignment
        _registry[(os.path.realpath(self._file), name)] = self

    @property
    def assignment(self) -> Assignment:
        if self._assignment is None:
            self._assignment = assignment_for_test_file(self._file)
            if self._assignment is None:
                raise GraderError(f"cannot find the assignment of {self._file}")
        return self._assignment

    def _labels(self, fn_name: str) -> Labels:
        sig = self.assignment.api.get(fn_name)
        return Labels(fn_name, sig.params if sig else [])

    # -- calling the student's function, wherever it lives
    def _student_outcome(self, fn_name: str, student: Any, args, kwargs, upstream,
                         want_grad: bool) -> dict:
        if student is None:
            raise CheckFailed([Problem(
                "missing", f"`{fn_name}` is not defined in your file: define it with the "
                           f"signature {self._signature(fn_name)}")], status="error")
        remote = getattr(student, "__remote_outcome__", None)
        if remote is not None:
            return remote(args, kwargs, upstream=upstream, want_grad=want_grad,
                          forbidden=self.forbidden, question=self.name)
        if not callable(student):
            kind = getattr(student, "type_name", type(student).__name__)
            raise CheckFailed([Problem(
                "missing", f"`{fn_name}` in your file is a {kind}, not a function")],
                status="error")
        outcome = run_call(student, args, kwargs, upstream=upstream, want_grad=want_grad,
                           forbidden=self.forbidden, api=list(self.assignment.api))
        return roundtrip_outcome(outcome)

    def _signature(self, fn_name: str) -> str:
        sig = self.assignment.api.get(fn_name)
        return sig.render() if sig else f"{fn_name}(...)"

    def call(self, fn_name: str, student: Any, *args, **kwargs) -> Any:
        """Call the student's function (no gradients) and return its output or raise CheckFailed."""
        outcome = self._student_outcome(fn_name, student, args, kwargs, None, False)
        self._raise_for_status(fn_name, outcome, _has_numpy((args, kwargs)))
        return outcome["output"]

    def check(self, fn_name: str, student: Any, *args, expected: snapshot | None = None,
              props: Sequence[checks.Property] = (), grad: bool = True, seed: int = 0,
              large_inputs: bool = False, **kwargs) -> None:
        """Compare `student(*args, **kwargs)` with the reference on the same inputs.

        Checks the structure, shape, dtype and values of the output, `props`, the gradient of a
        seeded random upstream gradient with respect to every floating-point input (when
        `grad`), that no input was changed in place, and that no forbidden call was made.
        """
        labels = self._labels(fn_name)
        if expected is not None:
            exp = _snapshot_outcome(self.assignment, self.name, expected.key, fn_name, args,
                                    kwargs, seed, grad)
        else:
            exp = _reference_outcome(self.assignment, fn_name, args, kwargs, seed, grad)
        if student is None and _ctx()["record"] is not None:
            return
        got = self._student_outcome(fn_name, student, args, kwargs, exp["upstream"], grad)
        # Kept for naming a known mistake later (autograder.diagnose), in this trusted process.
        record = diagnose.CheckRecord(self.assignment, self.name, fn_name, args, kwargs, exp, got,
                                      seed, grad, large_inputs, self.tolerance)
        numpy_inputs = _has_numpy((args, kwargs))
        try:
            self._raise_for_status(fn_name, got, numpy_inputs)
            problems = self._compare(exp, got, labels, props, (args, kwargs), large_inputs,
                                     numpy_inputs)
            if problems:
                raise CheckFailed(problems)
        except CheckFailed as e:
            e.called = got["called"]  # lets the report blame a failing helper question
            e.record = record
            raise
        diagnose.note_check(record, passed=True)

    def check_roundtrip(self, split_name: str, split: Any, merge_name: str, merge: Any,
                        x: torch.Tensor | np.ndarray, *args) -> None:
        """`merge(split(x, *args))` gives back exactly `x` (a tensor, or a NumPy array)."""
        kind = np.ndarray if isinstance(x, np.ndarray) else torch.Tensor
        noun = "a NumPy array" if kind is np.ndarray else "a tensor"
        parts = self.call(split_name, split, x, *args)
        if not isinstance(parts, kind):
            raise CheckFailed([Problem("type", f"{split_name} should return {noun}, got "
                                               f"{checks.describe_type(parts)}")])
        back = self.call(merge_name, merge, parts)
        what = f"{merge_name}({split_name}(x))"
        if not isinstance(back, kind):
            raise CheckFailed([Problem("type", f"{what} should be {noun}, got "
                                               f"{checks.describe_type(back)}")])
        problems = checks.compare_tensor(x, back, what, tolerance={"float32": (0, 0),
                                                                     "float64": (0, 0)})
        if problems:
            p = problems[0]
            raise CheckFailed([Problem(p.kind, p.public + f"; {what} must give back x exactly",
                                       (p.hidden or p.public) + f"; {what} must give back x")])

    # -- knowledge checks
    def check_answer(self, name: str, value: Any, *, expected: snapshot | None = None,
                     hint: str, wrong: dict | None = None) -> None:
        """Judge a value the student wrote (`name = ...` in their file), not a function.

        The right answer is the reference module's variable `name` (hidden cases), or its
        digest recorded by `autograder snapshot` (public cases, which ship to students). Numbers
        agree to 6 significant digits, text ignores case, and tuples and lists are alike. A
        wrong answer gets `hint`, or the message `wrong` gives for that very answer (for common
        wrong answers); neither may contain the right answer.
        """
        store = _ctx()["record"]
        if expected is None or store is not None:
            try:
                right = getattr(self.assignment.load_reference(), name)
            except (AssignmentError, AttributeError) as e:
                raise GraderError(f"the reference defines no answer {name}: {e}") from e
            try:
                digest, form = answer_digest(name, right), answer_form(right)
            except TypeError as e:
                raise GraderError(f"the reference's answer {name} cannot be checked "
                                  f"({e})") from e
            if store is not None and expected is not None:
                store.setdefault(self.name, {})[expected.key] = {
                    "answer": name, "digest": digest, "form": form}
                if value is None:
                    return
        else:
            data = _load_snapshot(_snapshot_path(self.assignment, self.name)).get(expected.key)
            if data is None:
                raise GraderError(f"snapshot {self.name}/{expected.key} is missing: run "
                                  "`autograder snapshot`")
            if data.get("answer") != name:
                raise GraderError(f"snapshot {self.name}/{expected.key} is stale: run "
                                  "`autograder snapshot`")
            digest, form = data["digest"], data["form"]
        if isinstance(value, MissingAnswer):
            raise CheckFailed([Problem(
                "missing", f"`{name}` is not defined in your file: keep the line "
                           f"`{name} = ...` from the template and put your answer there")],
                status="error")
        if value is None:
            raise CheckFailed([Problem(
                "not_attempted", f"`{name}` is still None: replace None with your answer "
                                 f"({form})")], status="not_attempted")
        try:
            mine = _canonical(value)
        except TypeError as e:
            what = getattr(value, "type_name", None) if isinstance(value, Opaque) else None
            shown = f"a {what}" if what else str(e) if str(e).startswith("a number") else \
                checks.describe_type(value)
            raise CheckFailed([Problem(
                "type", f"`{name}` should be {form}, but it is {shown}")]) from None
        if _form_of_canonical(mine) != form:
            raise CheckFailed([Problem(
                "type", f"`{name}` should be {form}, but it is {_show(value)}")])
        if answer_digest(name, value) == digest:
            return
        known = {json.dumps(_canonical(k)): v for k, v in (wrong or {}).items()}
        why = known.get(json.dumps(mine), hint)
        raise CheckFailed([Problem("answer", f"`{name}` = {_show(value)} is not right: {why}")])

    # -- judging
    def _raise_for_status(self, fn_name: str, got: dict, numpy_inputs: bool = False) -> None:
        status, err = got["status"], got.get("error") or {}
        # Shortcuts found in the source by the trusted static scan (`static_scan`), beside the
        # calls the worker saw: either makes the case a forbidden call.
        static = [f for f in got.get("static_forbidden") or []
                  if not any(f"`{n}`" in f for n in got["forbidden"])]
        if got["forbidden"] or static:
            # A named function says more than the autograd node it left behind.
            hits = [n for n in got["forbidden"] if not n.startswith("autograd.")] or \
                got["forbidden"]
            names = ", ".join(
                f"a library routine (`{n[len('autograd.'):]}` in the autograd graph of your "
                "result)" if n.startswith("autograd.") else f"`{n}`" for n in hits)
            said = [f"called {names}"] if hits else []
            if static:
                said.append("uses the library's version (" + "; ".join(static[:3]) + ")")
            noun = "array" if numpy_inputs else "tensor"
            raise CheckFailed([Problem(
                "forbidden", f"{fn_name} {' and '.join(said)}, which this question asks you to "
                             f"write yourself; implement it with basic {noun} operations")],
                status="forbidden")
        if status == "ok":
            return
        where = _where(err)
        if status == "not_implemented":
            culprit = err.get("function")
            if culprit and culprit != fn_name and culprit in self.assignment.api:
                raise CheckFailed([Problem(
                    "dependency", f"{fn_name} calls your `{culprit}`, which is not implemented "
                                  f"yet{where}")], status="error")
            raise CheckFailed([Problem("not_attempted", f"`{fn_name}` is not implemented yet "
                                                        "(it raises NotImplementedError)")],
                              status="not_attempted")
        if status == "memory":
            raise CheckFailed([Problem("memory", f"{fn_name} ran out of memory{where}: "
                                                 f"{err.get('message')}")], status="memory")
        hint = ""
        message = str(err.get("message"))
        if any(m in message for m in _SHAPE_ERRORS):
            swap = "`np.swapaxes(k, -2, -1)`" if numpy_inputs else "`.transpose(-2, -1)`"
            hint = ("; a shape mismatch: check the shapes on that line when inputs have extra "
                    "leading dimensions or Tq != Tk (`.T` reverses every dimension; "
                    f"{swap} swaps the last two)")
        if "in-place operation" in message:
            hint = ("; your code changes a tensor in place (`x -= ...`, `x[...] = ...`, "
                    "`.add_()`), which breaks autograd: compute a new tensor instead")
        raise CheckFailed([Problem("error", f"{fn_name} raised {err.get('type')}: "
                                            f"{err.get('message')}{where}{hint}")],
                          status="error")

    def _compare(self, exp: dict, got: dict, labels: Labels, props, inputs,
                 large_inputs: bool, numpy_inputs: bool) -> list[Problem]:
        what = f"the output of {labels.function}"
        expected, output = exp["output"], got["output"]
        problems = checks.compare_structure(expected, output, what)
        if problems:
            return problems
        problems = checks.compare_mutation(got["mutated"], labels,
                                           "arrays" if numpy_inputs else "tensors")
        if problems:
            return problems
        for path, e in iter_arrays(expected):
            g = output
            for p in path:
                g = g[p]
            name = what if not path else _item_name(self.assignment, labels.function, path)
            problems += checks.compare_tensor(e, g, name, tolerance=self.tolerance,
                                              large_inputs=large_inputs)
            if problems:
                break
        prop_problems = []
        for prop in props:
            prop_problems += prop(output, inputs, labels)
        if problems:
            if problems[0].kind == "values" and prop_problems:
                p, extra = problems[0], prop_problems[0]
                problems[0] = Problem(p.kind, f"{p.public}; {extra.public}",
                                      f"{p.hidden}; {extra.public}")
            return problems[:1]
        if prop_problems:
            return prop_problems[:1]
        if exp.get("grads") is not None:
            return checks.compare_gradients(exp["grads"], got["grads"], got["grad_error"], labels,
                                            self.tolerance)
        return []


_SHAPE_ERRORS = ("must match the size", "cannot be multiplied", "size mismatch",
                 "shape '[", "Dimension out of range", "cannot be broadcast",
                 "The expanded size",
                 # NumPy's words for the same
                 "could not be broadcast", "mismatch in its core dimension",
                 "cannot reshape array", "is out of bounds for array")


def _has_numpy(value: Any) -> bool:
    return any(isinstance(a, np.ndarray) for _, a in iter_arrays(value))


def _item_name(assignment: Assignment, function: str, path: tuple) -> str:
    """Name an item of a returned tuple, from the assignment's `[outputs]` table."""
    names = assignment.config.get("outputs", {}).get(function, [])
    i = path[0]
    if isinstance(i, int) and i < len(names):
        return f"the {names[i]} returned by {function}"
    return f"item {i} returned by {function}"


def _where(err: dict) -> str:
    if err.get("line"):
        code = f": `{err['code']}`" if err.get("code") else ""
        return f" (line {err['line']} of {err.get('file')}, in {err.get('function')}{code})"
    return ""
