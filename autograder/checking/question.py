"""`Question`, what question files make, and how it judges an outcome.

A question file is an otter exception-based test file. Each `@test_case` receives the student's
functions (otter looks them up by parameter name) and calls `Question.check`. Those functions are
either real functions (otter's in-process tools, `autograder check`) or `RemoteFunction` stand-ins
that forward each call to a sandboxed worker (`autograder grade`); `check` works the same way with
both and raises `CheckFailed` with student-readable problems when the case fails. How it runs
(grade, the student's check, otter's notebook, snapshot recording) is its context, which comes
with the student's names (`context.py`).

Expected values come from the live hidden reference (hidden cases) or from a snapshot recorded
from it by `autograder snapshot` (public cases, so that students need no reference code).

Inputs may be torch tensors (`tensor`, `randn`...) or NumPy arrays (`array`, or `to_numpy` of
the same): an assignment whose functions take NumPy arrays expects NumPy arrays back, and has no
gradients to compare. Outputs may be of any structure (`outputs.py`). Besides functions, a case
may judge a plain value the student wrote, a knowledge-check answer (`Question.check_answer`);
public answers are stored as digests, so the shipped snapshots do not print them.

Question files import `Question`, with the helpers of `inputs` (case inputs), `expected` (the
reference's and snapshots' outcomes) and `answers` (knowledge-check answers), from their public
face, `autograder.cases`.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from ..memo.answer_digest import wrong_output_digest
from ..model.assignment import Assignment, AssignmentError, assignment_for_test_file
from ..model.status import CaseStatus
from ..sandbox.execute import Chained, iter_arrays, path_key, run_call, with_chained_functions
from ..sandbox.protocol import roundtrip_outcome
from ..sandbox.routines import table_for
from ..sandbox.wire import Opaque
from . import checks
from .answers import (MissingAnswer, answer_digest, answer_form, canonical_answer,
                      form_of_canonical, shown_answer)
from .checks import CheckFailed, Labels
from .context import CheckContext, Mode, unbind
from .expected import (GraderError, load_snapshot, reference_outcome, snapshot_outcome,
                       snapshot_path, snapshot)
from .outputs import Uncomparable, leaf_problems, leaves, select_part, structure_problem
from .paths import (OutputNames, case_tolerance, parse_path, resolve_path, split_tolerance,
                    tolerance_at)
from .problems import Advice, Problem
from .record import CheckRecord


# ------------------------------------------------------------------ the question

# Every Question made, by (question file, name): lets the grader learn each question's
# forbidden names before a student's module is imported (`runner.question_forbidden`).
_registry: dict[tuple[str, str], "Question"] = {}


def questions_in(test_file: str | Path) -> list["Question"]:
    """The Question objects a loaded question file created."""
    path = os.path.realpath(str(test_file))
    return [q for (f, _), q in list(_registry.items()) if f == path]


class Question:
    """One question of an assignment: its forbidden library calls, tolerances, and `check`."""

    # Names the likely mistake of a check that fails in otter's run, where no runner does it
    # afterwards: (record, the student's function) -> the "likely mistake" line, or None. The
    # question files' face (`autograder.cases`) gives its `Question` the notebook's.
    notebook_namer: Callable[[CheckRecord, Any], str | None] | None = None

    def __init__(self, name: str, *, forbidden: Sequence[str] = (),
                 tolerance: dict | None = None, input_precision: str | None = None,
                 shape_hint: str | None = None, assignment: Assignment | None = None):
        self.name = name
        # As the question file lists them; `forbidden` adds those of assignment.toml.
        self.own_forbidden = list(forbidden)
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

    @property
    def forbidden(self) -> list[str]:
        """The routines this question forbids: assignment.toml's, then the question file's."""
        try:
            info = self.assignment.question(self.name)
        except (AssignmentError, GraderError):
            return list(self.own_forbidden)
        names = list(dict.fromkeys(info.forbidden))
        return names + [n for n in self.own_forbidden if n not in names]

    def _labels(self, fn_name: str) -> Labels:
        sig = self.assignment.api.get(fn_name)
        return Labels(fn_name, sig.params if sig else [])

    def _output_names(self, fn_name: str) -> OutputNames:
        return OutputNames(fn_name, self.assignment.config.get("outputs", {}).get(fn_name))

    # -- calling the student's function, wherever it lives
    def _student_outcome(self, fn_name: str, student: Any, args, kwargs, upstream,
                         want_grad: bool) -> dict:
        if student is None:
            raise CheckFailed([Problem.of("missing", case="undefined", function=fn_name,
                                          signature=self._signature(fn_name))],
                              status=CaseStatus.ERROR)
        remote = getattr(student, "__remote_outcome__", None)
        if remote is not None:
            return remote(args, kwargs, upstream=upstream, want_grad=want_grad,
                          forbidden=self.forbidden, question=self.name)
        if not callable(student):
            kind = getattr(student, "type_name", type(student).__name__)
            raise CheckFailed([Problem.of("missing", case="not_a_function", function=fn_name,
                                          type=kind)], status=CaseStatus.ERROR)
        forbidden = self.forbidden
        table = table_for(self.assignment.routines)
        outcome = run_call(student, args, kwargs, upstream=upstream, want_grad=want_grad,
                           forbidden=forbidden, api=list(self.assignment.api),
                           plans=[table.plan(n) for n in forbidden])
        return roundtrip_outcome(outcome, fn_name)

    def _signature(self, fn_name: str) -> str:
        sig = self.assignment.api.get(fn_name)
        return sig.render() if sig else f"{fn_name}(...)"

    def call(self, fn_name: str, student: Any, *args, **kwargs) -> Any:
        """Call the student's function (no gradients) and return its output or raise CheckFailed."""
        student, _ = unbind(student)
        outcome = self._student_outcome(fn_name, student, args, kwargs, None, False)
        failure = self._status_problem(fn_name, outcome, _has_numpy((args, kwargs)))
        if failure is not None:
            raise CheckFailed([failure[0]], status=failure[1])
        return outcome["output"]

    def output_of(self, fn_name: str, student: Any, *args, part: Any = (), **kwargs) -> Chained:
        """An input made by the student's own function: `student(*args, **kwargs)`, then the
        place `part` of its output (an item's position, an `[outputs]` name, a key, or a path
        as feedback writes it: `"cache"`, `'[1]["k"]'`), made where the student's code runs and
        passed on from there, e.g. a backward pass fed the student's own forward cache:

            q.check("norm_backward", norm_backward, dy,
                    q.output_of("norm_forward", norm_forward, x, part="cache"))

        The expected outcome is the reference's backward fed the reference's forward."""
        student, _ = unbind(student)
        steps = parse_path(part, self._output_names(fn_name)) if part != () else ()
        if steps is None:
            raise GraderError(f"output_of: {part!r} is not a place in the output of {fn_name}")
        return Chained(fn_name, student, args, kwargs, steps)

    def check(self, fn_name: str, student: Any, *args, expected: snapshot | None = None,
              props: Sequence[checks.Property] = (), grad: bool = True, seed: int = 0,
              large_inputs: bool = False, tolerance: dict | None = None, part: Any = (),
              **kwargs) -> None:
        """Compare `student(*args, **kwargs)` with the reference on the same inputs.

        Checks the structure of the output (tuples, lists, dicts, namedtuples, dataclasses),
        then every leaf: arrays' shape, dtype and values, numbers, strings; `props`; the
        gradient of a seeded random upstream gradient with respect to every floating-point
        input (when `grad`), through every differentiable tensor of the output; that no input
        was changed (in place, or a dict or list changed); and that no forbidden call was made.
        `tolerance` adds this case's own (rtol, atol) per dtype, and per place in the output
        (`{"dlogits": {"float32": (1e-4, 1e-6)}}`), to the question's. `part` compares one
        place of the output only (e.g. `part=0`, `part="y"`), where the rest is of the
        student's own design (a forward pass's cache).
        """
        student, context = unbind(student)
        names = self._output_names(fn_name)
        exp = self._expected(fn_name, args, kwargs, expected, seed, grad, tolerance, part, names,
                             context)
        if student is None and context.mode is Mode.RECORD:
            return
        # The inputs as a record keeps them: a chained input without the student's function
        # (naming never calls the student's code).
        kept_args, kept_kwargs = with_chained_functions(tuple(args), dict(kwargs),
                                                        lambda name: None)

        def record_of(got: dict) -> CheckRecord:
            return CheckRecord(self.assignment, self.name, fn_name, kept_args,
                                        kept_kwargs, exp.outcome, got, seed, grad, large_inputs,
                                        exp.tolerance, part=exp.part)

        try:
            got = self._student_outcome(fn_name, student, args, kwargs,
                                        exp.outcome["upstream"], grad)
        except checks.CallStopped as e:
            if e.routines:      # the refusal's evidence, as a check in this process lists it
                e.with_record(record_of(
                    {"status": "error", "output": None, "grads": None, "grad_error": None,
                     "mutated": [], "forbidden": list(e.routines), "called": [],
                     "error": {"type": "forbidden", "message": str(e)}}))
            raise
        # Kept for naming a known mistake later (autograder.diagnose), in this trusted process.
        record = record_of(got)
        numpy_inputs = _has_numpy((args, kwargs))
        failure = self._status_problem(fn_name, got, numpy_inputs)
        if failure is None:
            problems = self._compare(exp, got, self._labels(fn_name), names, props,
                                     (args, kwargs), large_inputs, numpy_inputs)
            failure = (problems[0], CaseStatus.FAILED) if problems else None
        if failure is None:
            context.note(record, passed=True)
            return
        problem, status = failure
        error = CheckFailed([problem], status=status, called=got["called"], record=record,
                            output_digest=wrong_output_digest(got, [problem]))
        if context.mode is Mode.NOTEBOOK and self.notebook_namer is not None:
            # Otter's run: no runner names mistakes after the last call, so this check does.
            line = self.notebook_namer(record, student)
            if line:
                error.args = (f"{error.args[0] if error.args else ''}\n{line}",)
        raise error

    def _expected(self, fn_name: str, args, kwargs, expected: snapshot | None, seed: int,
                  grad: bool, tolerance: dict | None, part: Any, names: OutputNames,
                  context: CheckContext) -> "_Expected":
        """The reference's outcome of a case (from its snapshot for a public case), the place
        of the output it compares, and the tolerances it compares with."""
        steps = parse_path(part, names) if part != () else ()
        if steps is None:
            raise GraderError(f"check: {part!r} is not a place in the output of {fn_name}")
        if expected is not None:
            outcome = snapshot_outcome(self.assignment, self.name, expected.key, fn_name, args,
                                        kwargs, seed, grad, context=context,
                                        tolerance=self._recorded_tolerance(tolerance),
                                        part=steps)
        else:
            outcome = reference_outcome(self.assignment, fn_name, args, kwargs, seed, grad,
                                         steps)
        where = resolve_path(outcome["output"], steps)
        if where is None:
            raise GraderError(f"check: the output of {fn_name} has no part {part!r}")
        table, unknown = case_tolerance(self.tolerance, tolerance, outcome["output"], names)
        if unknown:
            raise GraderError(f"the tolerance of question {self.name} names "
                              f"{', '.join(repr(u) for u in unknown)}, which the output of "
                              f"{fn_name} does not have")
        slack = checks.input_precision_slack(self.input_precision,
                                             [a for _, a in iter_arrays((args, kwargs))])
        return _Expected(outcome, where, table, checks.widen(table, self.input_precision, slack),
                         slack)

    def _recorded_tolerance(self, case: dict | None) -> dict:
        """The per-dtype table a snapshot of this case is rounded within: the question's and
        the case's, tightened where a table of one place in the output is tighter."""
        q_dtypes, q_places = split_tolerance(self.tolerance)
        c_dtypes, c_places = split_tolerance(case)
        table = {**q_dtypes, **c_dtypes}
        for sub in list(q_places.values()) + list(c_places.values()):
            for name, (rtol, atol) in (sub if isinstance(sub, dict) else {}).items():
                base = checks.tolerance_for(name, table)
                table[name] = (min(base[0], rtol), min(base[1], atol))
        return table

    def check_roundtrip(self, split_name: str, split: Any, merge_name: str, merge: Any,
                        x: torch.Tensor | np.ndarray, *args) -> None:
        """`merge(split(x, *args))` gives back exactly `x` (a tensor, or a NumPy array)."""
        kind = np.ndarray if isinstance(x, np.ndarray) else torch.Tensor
        noun = "a NumPy array" if kind is np.ndarray else "a tensor"
        parts = self.call(split_name, split, x, *args)
        if not isinstance(parts, kind):
            raise CheckFailed([Problem.of("type", form="roundtrip", what=split_name,
                                          verb="return", expected=noun,
                                          got=checks.describe_type(parts))])
        back = self.call(merge_name, merge, parts)
        what = f"{merge_name}({split_name}(x))"
        if not isinstance(back, kind):
            raise CheckFailed([Problem.of("type", form="roundtrip", what=what, verb="be",
                                          expected=noun, got=checks.describe_type(back))])
        problems = checks.compare_tensor(x, back, what, tolerance={"float32": (0, 0),
                                                                     "float64": (0, 0)})
        if problems:
            raise CheckFailed([problems[0].with_advice(Advice(
                "roundtrip", f"; {what} must give back x exactly", f"; {what} must give back x"))])

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
        value, context = unbind(value)
        recording = context.recording
        if expected is None or recording is not None:
            try:
                right = getattr(self.assignment.load_reference(), name)
            except (AssignmentError, AttributeError) as e:
                raise GraderError(f"the reference defines no answer {name}: {e}") from e
            try:
                digest, form = answer_digest(name, right), answer_form(right)
            except TypeError as e:
                raise GraderError(f"the reference's answer {name} cannot be checked "
                                  f"({e})") from e
            if recording is not None and expected is not None:
                recording.store.setdefault(self.name, {})[expected.key] = {
                    "answer": name, "digest": digest, "form": form}
                if value is None:
                    return
        else:
            data = load_snapshot(snapshot_path(self.assignment, self.name)).get(expected.key)
            if data is None:
                raise GraderError(f"snapshot {self.name}/{expected.key} is missing: run "
                                  "`autograder snapshot`")
            if data.get("answer") != name:
                raise GraderError(f"snapshot {self.name}/{expected.key} is stale: run "
                                  "`autograder snapshot`")
            digest, form = data["digest"], data["form"]
        if isinstance(value, MissingAnswer):
            raise CheckFailed([Problem.of("missing", case="answer", name=name)],
                              status=CaseStatus.ERROR)
        if value is None:
            raise CheckFailed([Problem.of("not_attempted", case="answer", name=name, form=form)],
                              status=CaseStatus.NOT_ATTEMPTED)
        try:
            mine = canonical_answer(value)
        except TypeError as e:
            what = getattr(value, "type_name", None) if isinstance(value, Opaque) else None
            shown = f"a {what}" if what else str(e) if str(e).startswith("a number") else \
                checks.describe_type(value)
            raise CheckFailed([Problem.of("type", form="answer", name=name, expected=form,
                                          got=shown)]) from None
        if form_of_canonical(mine) != form:
            raise CheckFailed([Problem.of("type", form="answer", name=name, expected=form,
                                          got=shown_answer(value))])
        if answer_digest(name, value) == digest:
            return
        known = {json.dumps(canonical_answer(k)): v for k, v in (wrong or {}).items()}
        why = known.get(json.dumps(mine), hint)
        raise CheckFailed([Problem.of("answer", name=name, shown=shown_answer(value), why=why)])

    # -- judging
    def _refusal(self, fn_name: str, got: dict, noun: str) -> Problem:
        """A refusal the call met, in the words `autograder grade` uses (`words.py`): the
        routine as the assignment names and explains it, and how it was refused."""
        how = dict(zip(got["forbidden"], got.get("refused_how") or []))
        # A named function says more than the autograd node it left behind.
        hits = [n for n in got["forbidden"] if not n.startswith("autograd.")]
        if not hits:
            return Problem.of("forbidden", function=fn_name, routines=list(got["forbidden"]),
                              noun=noun)
        name, routines = hits[0], self.assignment.routines
        return Problem.of("forbidden", function=fn_name, routines=hits, noun=noun,
                          shown=routines.shown(name), how=how.get(name, "routine"),
                          explain=routines.explain(name))

    def _status_problem(self, fn_name: str, got: dict, numpy_inputs: bool = False
                        ) -> tuple[Problem, CaseStatus] | None:
        """What the call's status says is wrong (a forbidden call, an error, a stub...), with
        the case's status; None when the call returned."""
        status, err = got["status"], got.get("error") or {}
        # Forbidden calls the worker saw at run time: hard evidence. (The source scan's
        # sightings only flag the row for review: `integrity`.)
        if got["forbidden"]:
            return (self._refusal(fn_name, got, "array" if numpy_inputs else "tensor"),
                    CaseStatus.FORBIDDEN)
        if status == "ok":
            return None
        where = _where(err)
        chained = (got.get("chained") or {}).get("function") or ""
        if chained and (got.get("chained") or {}).get("missing"):
            return (Problem.of("type", form="chained", function=fn_name, culprit=chained,
                               item=got["chained"]["missing"]), CaseStatus.ERROR)
        if status == "not_implemented":
            culprit = chained or err.get("function")
            if culprit and culprit != fn_name and culprit in self.assignment.api:
                # A chained input's function still a stub: nothing of `fn_name` ran yet.
                return (Problem.of("dependency", function=fn_name, culprit=culprit, where=where,
                                   chained=bool(chained)),
                        CaseStatus.NOT_ATTEMPTED if chained else CaseStatus.ERROR)
            return (Problem.of("not_attempted", case="stub", function=fn_name),
                    CaseStatus.NOT_ATTEMPTED)
        if status == "memory":
            return (Problem.of("memory", function=fn_name, where=where,
                               message=err.get("message")), CaseStatus.MEMORY)
        message = str(err.get("message"))
        advice = None
        if any(m in message for m in _SHAPE_ERRORS):
            text = SHAPE_ADVICE
            code = str(err.get("code") or "")
            if _REVERSE_ALL.search(code):
                swap = "`np.swapaxes(k, -2, -1)`" if numpy_inputs else "`.transpose(-2, -1)`"
                text += (f" (`.T` reverses every dimension, which breaks extra leading "
                         f"dimensions; {swap} swaps the last two)")
            if self.shape_hint:
                text += f"; {self.shape_hint}"
            advice = Advice("shape", text)
        if "values to unpack" in message and _UNPACKS_SHAPE.search(str(err.get("code") or "")):
            advice = Advice("unpack", "; a shape assumption: this line unpacks a fixed number "
                                      "of dimensions, but inputs may have extra leading "
                                      "dimensions (or none): `*lead, T, d = x.shape` takes any "
                                      "number")
        if "in-place operation" in message:
            advice = Advice("in_place", "; your code changes a tensor in place (`x -= ...`, "
                                        "`x[...] = ...`, `.add_()`), which breaks autograd: "
                                        "compute a new tensor instead")
        first, _, rest = tidy_error(message).partition("\n")
        return (Problem.of("error", function=fn_name, type=err.get("type"), first=first,
                           where=where, rest=rest, chained=chained, advice=advice),
                CaseStatus.ERROR)

    def _compare(self, exp: "_Expected", got: dict, labels: Labels, names: OutputNames, props,
                 inputs, large_inputs: bool, numpy_inputs: bool) -> list[Problem]:
        """What is wrong with the outcome of a call that returned: its structure, changed
        inputs, every value, the properties, then the gradients."""
        output = got["output"]
        # The part of the output the case compares (all of it, but for a forward pass's cache).
        expected, mine, problem = select_part(exp.outcome["output"], output, exp.part, names)
        try:
            problem = problem or structure_problem(expected, mine, exp.part, names)
        except Uncomparable as e:
            raise GraderError(str(e)) from None
        if problem is not None:
            return [problem]
        problems = checks.compare_mutation(got["mutated"], labels,
                                           "arrays" if numpy_inputs else "tensors",
                                           got.get("changes"), inputs)
        if problems:
            return problems
        dtypes = _float_dtypes(inputs)
        for path, e, g in leaves(expected, mine, exp.part):
            problems = leaf_problems(e, g, names(path),
                                     tolerance=tolerance_at(exp.tolerance, path),
                                     large_inputs=large_inputs, input_dtypes=dtypes)
            if problems:
                break
        prop_problems = []
        for prop in props:
            prop_problems += prop(output, inputs, labels)
        if problems:
            if problems[0].kind == "values" and prop_problems:
                p, extra = problems[0], prop_problems[0]
                problems[0] = Problem(p.kind, facts={**p.facts, "also": extra.public},
                                      advice=p.advice)
            return problems[:1]
        if prop_problems:
            return prop_problems[:1]
        if exp.outcome.get("grads") is not None:
            return self._gradient_problems(exp, got, expected, labels, names)
        return []

    def _gradient_problems(self, exp: "_Expected", got: dict, expected: Any, labels: Labels,
                           names: OutputNames) -> list[Problem]:
        upstream = exp.outcome.get("upstream")
        scale = max((checks.largest_magnitude(e) for _, e in iter_arrays(expected)),
                    default=0.0) * max((checks.largest_magnitude(u) for _, u in
                                        iter_arrays(upstream)), default=0.0)
        problems = checks.compare_gradients(
            exp.outcome["grads"], got["grads"], got["grad_error"], labels,
            checks.widen(checks.without_places(exp.table), self.input_precision, exp.slack,
                         atol_scale=scale))
        if problems and problems[0].facts.get("case") == "values":
            # Wrong gradients where a tensor of the output has no autograd graph: that tensor
            # is where they were lost.
            detached = _detached_parts(exp.outcome, got, expected, exp.part, names)
            if detached is not None:
                return [detached]
        return problems


@dataclass(frozen=True)
class _Expected:
    """What one case compares with: the reference's outcome, the place of the output the case
    compares (() for all of it), the tolerance table as written (per dtype and per place) and
    widened by the inputs' precision, and that widening (`slack`, for the gradients)."""

    outcome: dict
    part: tuple
    table: dict
    tolerance: dict
    slack: dict


def _detached_parts(exp: dict, got: dict, expected: Any, part: tuple,
                    names: OutputNames) -> Problem | None:
    """A differentiable tensor of the output (the reference's has an autograd graph) that the
    student's output gives without one: no gradient flows back through it."""
    cut = set(got.get("unconnected") or []) - set(exp.get("unconnected") or [])
    if not cut:
        return None
    for path, _ in iter_arrays(expected, part):
        if path_key(path) in cut:
            return Problem.of("gradient", case="detached_part", what=names(path))
    return None


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


# Said after a shape error's line (`Advice` "shape"); autograder.runner replaces it where another
# question's result shows the line is not the place to look.
SHAPE_ADVICE = "; a shape mismatch: check the shapes on that line"


def _where(err: dict) -> str:
    if err.get("line"):
        code = f": `{err['code']}`" if err.get("code") else ""
        return f" (line {err['line']} of {err.get('file')}, in {err.get('function')}{code})"
    return ""
