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

This module holds `Question` and how it judges an outcome; question files import it, with the
helpers of `inputs` (case inputs), `expected` (the reference's and snapshots' outcomes) and
`answers` (knowledge-check answers), from their public face, `autograder.cases`.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from ..model.status import CaseStatus
from . import checks
from .. import diagnose
from .answers import (MissingAnswer, _canonical, _form_of_canonical, _show,
                      answer_digest, answer_form)
from ..model.assignment import Assignment, AssignmentError, assignment_for_test_file
from .checks import CheckFailed, Labels, Problem
from ..memo.answer_digest import wrong_output_digest
from .expected import (GraderError, _ctx, _load_snapshot, _reference_outcome, _snapshot_outcome,
                       _snapshot_path, snapshot)
from ..sandbox.execute import iter_arrays, run_call
from ..sandbox.protocol import roundtrip_outcome
from ..sandbox.wire import Opaque



# ------------------------------------------------------------------ the question

# Every Question made, by (question file, name): lets the grader learn which forbidden names
# need tripwires before a student's module is imported (`forbidden_names`).
_registry: dict[tuple[str, str], "Question"] = {}


def questions_in(test_file: str | Path) -> list["Question"]:
    """The Question objects a loaded question file created."""
    path = os.path.realpath(str(test_file))
    return [q for (f, _), q in list(_registry.items()) if f == path]


class Question:
    """One question of an assignment: its forbidden library calls, tolerances, and `check`."""

    def __init__(self, name: str, *, forbidden: Sequence[str] = (),
                 tolerance: dict | None = None, input_precision: str | None = None,
                 shape_hint: str | None = None, assignment: Assignment | None = None):
        self.name = name
        self.forbidden = list(forbidden)
        self.tolerance = tolerance or {}
        # How the inputs' own precision widens each case's tolerances (checks.
        # INPUT_PRECISION_KINDS); checked here so that a typo fails when the file loads.
        checks.input_precision_slack(input_precision, [])
        self.input_precision = input_precision
        # Said under a shape error of this question's functions, where it applies.
        self.shape_hint = shape_hint
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
                           f"signature {self._signature(fn_name)}")], status=CaseStatus.ERROR)
        remote = getattr(student, "__remote_outcome__", None)
        if remote is not None:
            return remote(args, kwargs, upstream=upstream, want_grad=want_grad,
                          forbidden=self.forbidden, question=self.name)
        if not callable(student):
            kind = getattr(student, "type_name", type(student).__name__)
            raise CheckFailed([Problem(
                "missing", f"`{fn_name}` in your file is a {kind}, not a function")],
                status=CaseStatus.ERROR)
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
        slack = checks.input_precision_slack(self.input_precision,
                                             [a for _, a in iter_arrays((args, kwargs))])
        tolerance = checks.widen(self.tolerance, self.input_precision, slack)
        if expected is not None:
            exp = _snapshot_outcome(self.assignment, self.name, expected.key, fn_name, args,
                                    kwargs, seed, grad, tolerance=self.tolerance)
        else:
            exp = _reference_outcome(self.assignment, fn_name, args, kwargs, seed, grad)
        if student is None and _ctx()["record"] is not None:
            return
        try:
            got = self._student_outcome(fn_name, student, args, kwargs, exp["upstream"], grad)
        except checks.CallStopped as e:
            if e.routines:      # the refusal's evidence, as a check in this process lists it
                e.record = diagnose.CheckRecord(
                    self.assignment, self.name, fn_name, args, kwargs, exp,
                    {"status": "error", "output": None, "grads": None, "grad_error": None,
                     "mutated": [], "forbidden": list(e.routines), "called": [],
                     "error": {"type": "forbidden", "message": str(e)}},
                    seed, grad, large_inputs, tolerance)
            raise
        # Kept for naming a known mistake later (autograder.diagnose), in this trusted process.
        record = diagnose.CheckRecord(self.assignment, self.name, fn_name, args, kwargs, exp, got,
                                      seed, grad, large_inputs, tolerance)
        numpy_inputs = _has_numpy((args, kwargs))
        try:
            self._raise_for_status(fn_name, got, numpy_inputs)
            problems = self._compare(exp, got, labels, props, (args, kwargs), large_inputs,
                                     numpy_inputs, tolerance, slack)
            if problems:
                raise CheckFailed(problems)
        except CheckFailed as e:
            e.called = got["called"]  # lets the report blame a failing helper question
            e.record = record
            # The wrong output's digest, for the similarity report's second signal only.
            e.output_digest = wrong_output_digest(got, e.problems)
            if not diagnose.collecting() and _ctx()["record"] is None:
                # Outside a grading run: otter's grader.check (a notebook) or otter's grading.
                # Name the likely mistake as `autograder check` does.
                from ..platforms.notebook.hints import hint
                line = hint(record, student)
                if line:
                    e.args = (f"{e.args[0] if e.args else ''}\n{line}",)
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
                status=CaseStatus.ERROR)
        if value is None:
            raise CheckFailed([Problem(
                "not_attempted", f"`{name}` is still None: replace None with your answer "
                                 f"({form})")], status=CaseStatus.NOT_ATTEMPTED)
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
        # Forbidden calls the worker saw at run time: hard evidence. (The source scan's
        # sightings only flag the row for review: `integrity`.)
        if got["forbidden"]:
            # A named function says more than the autograd node it left behind.
            hits = [n for n in got["forbidden"] if not n.startswith("autograd.")] or \
                got["forbidden"]
            names = ", ".join(
                f"a library routine (`{n[len('autograd.'):]}` in the autograd graph of your "
                "result)" if n.startswith("autograd.") else f"`{n}`" for n in hits)
            noun = "array" if numpy_inputs else "tensor"
            raise CheckFailed([Problem(
                "forbidden", f"{fn_name} called {names}, which this question asks you to "
                             f"write yourself; implement it with basic {noun} operations")],
                status=CaseStatus.FORBIDDEN)
        if status == "ok":
            return
        where = _where(err)
        if status == "not_implemented":
            culprit = err.get("function")
            if culprit and culprit != fn_name and culprit in self.assignment.api:
                raise CheckFailed([Problem(
                    "dependency", f"{fn_name} calls your `{culprit}`, which is not implemented "
                                  f"yet{where}")], status=CaseStatus.ERROR)
            raise CheckFailed([Problem("not_attempted", f"`{fn_name}` is not implemented yet "
                                                        "(it raises NotImplementedError)")],
                              status=CaseStatus.NOT_ATTEMPTED)
        if status == "memory":
            raise CheckFailed([Problem("memory", f"{fn_name} ran out of memory{where}: "
                                                 f"{err.get('message')}")], status=CaseStatus.MEMORY)
        message = str(err.get("message"))
        hint = ""
        if any(m in message for m in _SHAPE_ERRORS):
            hint = SHAPE_ADVICE
            code = str(err.get("code") or "")
            if _REVERSE_ALL.search(code):
                swap = "`np.swapaxes(k, -2, -1)`" if numpy_inputs else "`.transpose(-2, -1)`"
                hint += (f" (`.T` reverses every dimension, which breaks extra leading "
                         f"dimensions; {swap} swaps the last two)")
            if self.shape_hint:
                hint += f"; {self.shape_hint}"
        if "values to unpack" in message and _UNPACKS_SHAPE.search(str(err.get("code") or "")):
            hint = ("; a shape assumption: this line unpacks a fixed number of dimensions, but "
                    "inputs may have extra leading dimensions (or none): `*lead, T, d = x.shape` "
                    "takes any number")
        if "in-place operation" in message:
            hint = ("; your code changes a tensor in place (`x -= ...`, `x[...] = ...`, "
                    "`.add_()`), which breaks autograd: compute a new tensor instead")
        first, _, rest = tidy_error(message).partition("\n")
        raise CheckFailed([Problem("error", f"{fn_name} raised {err.get('type')}: "
                                            f"{first}{where}{hint}" + (f"\n{rest}" if rest else ""))],
                          status=CaseStatus.ERROR)

    def _compare(self, exp: dict, got: dict, labels: Labels, props, inputs,
                 large_inputs: bool, numpy_inputs: bool, tolerance: dict,
                 slack: dict[str, float]) -> list[Problem]:
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
            problems += checks.compare_tensor(e, g, name, tolerance=tolerance,
                                              large_inputs=large_inputs,
                                              input_dtypes=_float_dtypes(inputs))
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
            scale = max((checks.largest_magnitude(e) for _, e in iter_arrays(expected)),
                        default=0.0) * max((checks.largest_magnitude(u) for _, u in
                                            iter_arrays(exp.get("upstream"))), default=0.0)
            return checks.compare_gradients(
                exp["grads"], got["grads"], got["grad_error"], labels,
                checks.widen(self.tolerance, self.input_precision, slack, atol_scale=scale))
        return []


_SHAPE_ERRORS = ("must match the size", "cannot be multiplied", "size mismatch",
                 "shape '[", "Dimension out of range", "cannot be broadcast",
                 "The expanded size",
                 # NumPy's words for the same
                 "could not be broadcast", "mismatch in its core dimension",
                 "cannot reshape array", "is out of bounds for array")


def _float_dtypes(value: Any) -> set[str]:
    """The floating-point dtypes of the arrays among a case's inputs."""
    return {checks.dtype_name(a) for _, a in iter_arrays(value)
            if checks.dtype_name(a).startswith(("float", "bfloat"))}


# `.T`, `.t()`, `np.transpose(x)` and `.transpose()` without axes reverse every dimension.
_REVERSE_ALL = re.compile(r"\.T\b|\.t\(\)|\.transpose\(\)|np\.transpose\([^,()]*\)")

# Unpacking a shape (`B, T, C = x.size()`): a ValueError that is really about dimensions.
_UNPACKS_SHAPE = re.compile(r"=\s*[\w.\[\]]*\.(shape|size\(\))")

ERROR_LINES = 4        # lines of a multi-line error message shown under its first
ERROR_CHARS = 400      # and the length of all of them together


def tidy_error(message: str) -> str:
    """A library's error text as one readable block: its first line, then up to `ERROR_LINES`
    more, indented, within `ERROR_CHARS` characters (torch's messages can run to pages). Only
    `\n` breaks a line: any other separator (`\r`, `\x85`, ...) stays in its line, where every
    output shows it escaped, and every output marks the further lines as the error's."""
    lines = [line.rstrip() for line in message.strip().split("\n") if line.strip()]
    if not lines:
        return ""
    text = lines[0]
    for line in lines[1:ERROR_LINES + 1]:
        text += "\n    " + line.strip()
    if len(lines) > ERROR_LINES + 1:
        text += "\n    ..."
    if len(text) > ERROR_CHARS:
        text = text[:ERROR_CHARS].rstrip() + " ..."
    return text


def _has_numpy(value: Any) -> bool:
    return any(isinstance(a, np.ndarray) for _, a in iter_arrays(value))


def _item_name(assignment: Assignment, function: str, path: tuple) -> str:
    """Name an item of a returned tuple, from the assignment's `[outputs]` table."""
    names = assignment.config.get("outputs", {}).get(function, [])
    i = path[0]
    if isinstance(i, int) and i < len(names):
        return f"the {names[i]} returned by {function}"
    return f"item {i} returned by {function}"


# Replaced by autograder.grading.runner where another question's result shows the line is not the
# place to look.
SHAPE_ADVICE = "; a shape mismatch: check the shapes on that line"


def _where(err: dict) -> str:
    if err.get("line"):
        code = f": `{err['code']}`" if err.get("code") else ""
        return f" (line {err['line']} of {err.get('file')}, in {err.get('function')}{code})"
    return ""
