"""Grading submissions: in the sandbox (`grade`) or in-process for a student's own check.

`grade_submission` is the trusted side. It reads the student's source (never importing it),
checks its syntax with `compile`, starts a worker in the sandbox, and runs every question file
with stand-ins for the student's functions. Whatever the submission does, it gets a row.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from . import integrity
from ..checking.answers import MISSING
from ..checking.checks import CheckFailed
from ..checking.context import Mode
from ..checking.problems import Problem
from ..intake.signatures import signature_note
from ..model.assignment import Assignment
from ..model.limits import Limits
from ..model.results import SubmissionResult
from ..model.routines import Routines
from ..model.status import CaseStatus, QuestionStatus
from ..sandbox.execute import Chained, describe_error
from .integrity import CallLog
from .runner import (QuestionStopped, failed_everywhere, grade_functions, internal_error,
                     malformed_reply, question_forbidden, refused_targets)
from ..sandbox import Sandbox, SandboxError
from ..sandbox.routines import table_for
from ..sandbox.session import MalformedReply, WorkerSession, WorkerStopped, forbidden_message
from ..static_scan import ScanResult, scan_source
from ..diagnose.stand_ins import WorkerStandIns
from ..intake.submissions import Submission, UnreadableSubmission, read_submission
from ..memo.tensor_cache import TensorMemo
from ..written import collect as written_collect

# Every submission gets the same inputs: their encodings are made once per grading process.
_INPUT_ENCODINGS = TensorMemo()


class RemoteFunction:
    """Stands in for a student's function in question files; each call runs in the worker.

    Forbidden calls are what the worker saw at run time. The trusted static scan's sightings
    of a forbidden routine on this function's call graph (`static_scan`) are noted in the call
    log for review (`integrity`): a sighting alone never makes a case a forbidden call.
    """

    def __init__(self, session: WorkerSession, name: str, scan: ScanResult | None = None,
                 log: CallLog | None = None, routines: Routines | None = None):
        self._session = session
        # The assignment's routines: how feedback names them, the scan's other words for them.
        self._routines = routines if routines is not None else Routines()
        self._scan = scan
        self._log = log
        self.__name__ = name

    def __remote_outcome__(self, args, kwargs, *, upstream, want_grad, forbidden, question):
        if self._log is not None:
            self._log.called(self.__name__)
            # A function whose output this call is given (`Question.output_of`) runs too.
            for value in [*args, *kwargs.values()]:
                if isinstance(value, Chained):
                    self._log.called(value.name)
        try:
            outcome = self._session.call(self.__name__, args, kwargs, upstream=upstream,
                                         want_grad=want_grad, forbidden=forbidden)
        except WorkerStopped as e:
            message = e.message
            routines = e.routines
            if routines and self._scan is not None and forbidden:
                # The run is the evidence; the scan, where it found the route, says where.
                found = self._scan.forbidden(self.__name__, list(forbidden), self._words())
                if found:
                    message = forbidden_message(
                        self.__name__, [self._routines.shown(routines[0])], e.noun,
                        [f.describe() for f in found], e.how,
                        self._routines.explain(routines[0]))
            raise QuestionStopped(e.status, message, routines) from None
        if self._scan is not None and self._log is not None and forbidden:
            found = self._scan.forbidden(self.__name__, list(forbidden), self._words())
            if found:
                self._log.sighted(found)
        return outcome

    def _words(self) -> dict[str, tuple[str, ...]]:
        """Other library words of each forbidden routine, for the scan (`also_named`)."""
        known = self._routines
        return {n: known.also_named(n) for n in known.routines} | {
            n: known.also_named(n) for r in known.routines.values() for n in r.names}

    def __call__(self, *args, **kwargs):
        # A question file's own call, outside its checks: in the question's worker.
        outcome = self.__remote_outcome__(args, kwargs, upstream=None, want_grad=False,
                                          forbidden=None, question=None)
        if outcome["status"] != "ok":
            err = outcome.get("error") or {}
            raise CheckFailed([Problem.of("error", function=self.__name__, type=err.get("type"),
                                          first=err.get("message"))], status=CaseStatus.ERROR)
        return outcome["output"]


class NotAFunction:
    """Stands in for a name the student defined as something other than a function."""

    def __init__(self, type_name: str):
        self.type_name = type_name


def looks_like_python(source: str) -> bool:
    """Whether some line starts a Python definition or import (one pass over the lines)."""
    return any(line.lstrip().startswith(("def ", "import ", "from ", "class "))
               for line in source.splitlines())


def _syntax_message(source: str, filename: str) -> str | None:
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        if not looks_like_python(source):
            # Never quote a file that is not the student's Python (whatever text it holds).
            return f"your file is not Python source (syntax error at line {e.lineno}: " \
                   f"{e.msg}); nothing in it could run"
        text = (e.text or "").strip()
        code = f": `{text[:120]}`" if text else ""
        return f"your file has a syntax error at line {e.lineno}{code} ({e.msg}); nothing in " \
               "it could run"
    except (ValueError, RecursionError, MemoryError) as e:
        return f"your file cannot be compiled ({type(e).__name__})"
    return None


def _load_failure(error: dict | None, status: str) -> tuple[CaseStatus, str]:
    err = error or {}
    where = f" at line {err['line']} (`{err.get('code')}`)" if err.get("line") else ""
    if status == CaseStatus.MEMORY:
        return CaseStatus.MEMORY, f"importing your file ran out of memory{where}"
    return CaseStatus.ERROR, (f"importing your file raised {err.get('type')}{where}: "
                              f"{err.get('message')}; code at the top level of your file must "
                              "run without errors")


def notebook_name(assignment: Assignment, path: Path | None = None) -> str:
    """How feedback names a notebook submission: its own file name (`nb_broken.ipynb`), shown
    on one line and kept short; the assignment's name for it when there is none to show."""
    own = Path(path).name if path is not None else ""
    if own.endswith(".ipynb") and len(own) <= 100 and own.isprintable():
        return own
    return Path(assignment.student_file).stem + ".ipynb"


def notebook_cells(sub: Submission, filename: str) -> tuple[list[tuple[int, str]], list[str]]:
    """The cells to run (those that compile) and a note per cell with a syntax error."""
    cells, notes = [], []
    for cell in sub.cells or []:
        try:
            compile(cell.source, f"cell {cell.number} of {filename}", "exec", dont_inherit=True)
        except SyntaxError as e:
            text = (e.text or "").strip()
            code = f" (`{text[:120]}`)" if text else ""
            notes.append(f"note: cell {cell.number} of {filename} has a syntax error at line "
                         f"{e.lineno}{code}: {e.msg}; it was skipped, the other cells ran")
            continue
        except (ValueError, RecursionError, MemoryError) as e:
            notes.append(f"note: cell {cell.number} of {filename} cannot be compiled "
                         f"({type(e).__name__}); it was skipped, the other cells ran")
            continue
        cells.append((cell.number, cell.source))
    return cells, notes


def cell_error_notes(errors: list[dict], filename: str) -> list[str]:
    """A note per notebook cell that raised an error while running."""
    notes = []
    for item in errors:
        err = item.get("error") or {}
        where = f" at line {err['line']} (`{err.get('code')}`)" if err.get("line") else ""
        what = ("ran out of memory" if item.get("status") == "memory"
                else f"raised {err.get('type')}{where}: {err.get('message')}")
        notes.append(f"note: cell {item['cell']} of {filename} {what}; the rest of that cell "
                     "did not run, the other cells did")
    return notes


def in_cell_order(notes: list[str]) -> list[str]:
    """Notes about notebook cells sorted by cell number (others first, in their order)."""
    prefix = "note: cell "

    def key(note: str) -> int:
        number = note[len(prefix):].split(" ", 1)[0] if note.startswith(prefix) else ""
        return int(number) if number.isdigit() and len(number) < 10 else 0
    return sorted(notes, key=key)


def signature_notes(assignment: Assignment, defined: dict) -> dict[str, list[str]]:
    """Notes per question for functions whose parameters differ from the contract in a way a
    call can trip over (`signatures.call_problems`); a renamed parameter alone gets none."""
    notes: dict[str, list[str]] = {}
    for name, sig in assignment.api.items():
        info = defined.get(name)
        if not info or info.get("kind") != "function" or info.get("params") is None:
            continue
        note = signature_note(sig, info["params"])
        qid = assignment.question_of(name)
        if note and qid:
            notes.setdefault(qid, []).append(note)
    return notes


def grade_submission(assignment: Assignment, path: Path, sandbox: Sandbox,
                     limits: Limits | None = None, questions: list[str] | None = None,
                     display_path: str | None = None,
                     include_hidden: bool = True) -> SubmissionResult:
    """Grade one file in the sandbox, with every case. Never raises for a student's doing, nor
    for a fault of the grader on this one submission (that becomes its row, an internal error);
    only a sandbox that cannot run at all (SandboxError) ends the caller's run."""
    shown = display_path or str(path)
    seen = _Seen()
    try:
        result = _grade_submission(assignment, path, sandbox, limits, questions, shown,
                                   include_hidden, seen)
    except MalformedReply as e:
        result = malformed_reply(assignment, shown, e.detail, include_hidden=include_hidden,
                                 sandbox=sandbox.description)
    except SandboxError:
        raise
    except Exception as e:  # noqa: BLE001 - one submission must never end a class run
        report_internal_error(shown, e)
        result = internal_error(assignment, shown, e, include_hidden=include_hidden,
                                sandbox=sandbox.description)
    return with_written_answers(assignment, result, seen.submission, seen.texts, questions)


class _Seen:
    """What grading read of a submission that its written answers come from, whatever way
    the grading ended: the file as read, and the worker's report of its text variables."""

    def __init__(self) -> None:
        self.submission: Submission | None = None
        self.texts: dict = {}


def with_written_answers(assignment: Assignment, result: SubmissionResult,
                         sub: Submission | None, reported: dict | None = None,
                         questions: list[str] | None = None) -> SubmissionResult:
    """The result with its written answers (`written/collect.py`): from the notebook's tagged
    Markdown cells, the module's strings as reported, else the source read without running
    it. Unanswered (0 points) when the file could not be read."""
    asked = [q for q in assignment.written if questions is None or q.id in questions]
    if not asked:
        return result
    if sub is None:
        result.written = written_collect.unanswered(asked)
    else:
        result.written = written_collect.answers(
            asked, reported=reported, source=sub.source,
            markdown=written_collect.from_markdown(sub.tagged_markdown, [q.id for q in asked]))
    result.notes += [n for w in result.written.values() for n in w.notes]
    return result


def _code_of(sub: Submission, cells: list[tuple[int, str]] | None) -> str:
    """The student's code as diagnosis reads it: the file, or a notebook's cells that run."""
    if cells is not None:
        return "\n\n".join(source for _, source in cells)
    return sub.source or ""


def text_only(error: UnreadableSubmission) -> Submission | None:
    """What a file Python refuses (not UTF-8) still holds as text, for its written answers."""
    return Submission(error.text) if error.text is not None else None


def with_answers_of_file(assignment: Assignment, result: SubmissionResult, path: Path | None,
                         questions: list[str] | None = None) -> SubmissionResult:
    """The result with the written answers its file holds, read and never run: for a row made
    without grading the file (the grader's own failure), whose answers are the student's
    all the same."""
    sub = None
    if path is not None:
        try:
            sub = read_submission(Path(path))
        except UnreadableSubmission as e:
            sub = text_only(e)
        except OSError:
            sub = None
    return with_written_answers(assignment, result, sub, None, questions)


def report_internal_error(shown: str, error: BaseException) -> None:
    """Tell the instructor, on stderr, where the grader failed (the row says only that): the
    exception and the innermost frames, on one line each."""
    import traceback

    frames = traceback.extract_tb(error.__traceback__)[-6:]
    where = "\n".join(f"  at {Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)
    print(f"autograder: internal error while grading {shown} (its row says so; the other "
          f"submissions are graded as usual): {type(error).__name__}: {str(error)[:300]}\n"
          f"{where}", file=sys.stderr)


def _grade_submission(assignment: Assignment, path: Path, sandbox: Sandbox,
                      limits: Limits | None, questions: list[str] | None, shown: str,
                      include_hidden: bool, seen: _Seen) -> SubmissionResult:
    limits = limits or assignment.limits
    start = time.monotonic()
    policy = integrity.tamper_policy(assignment)
    try:
        sub = read_submission(path)
    except UnreadableSubmission as e:
        seen.submission = text_only(e)
        return failed_everywhere(assignment, shown, CaseStatus.ERROR, str(e),
                                 include_hidden=include_hidden, sandbox=sandbox.description)
    seen.submission = sub
    notes = list(sub.notes)
    cells = None
    filename = assignment.student_file
    if sub.cells is not None:
        # A notebook: each cell runs on its own in the worker, going on after a failing one.
        filename = notebook_name(assignment, path)
        cells, syntax_notes = notebook_cells(sub, filename)
        notes += syntax_notes
    else:
        syntax = _syntax_message(sub.source, assignment.student_file)
        if syntax:
            return failed_everywhere(assignment, shown, CaseStatus.ERROR, syntax,
                                     include_hidden=include_hidden, sandbox=sandbox.description)
    # The second signal beside the worker's run-time evidence: the source as written, scanned
    # here, never imported (its proof withholds points, its doubts flag the row for review).
    scan = scan_source([source for _, source in cells] if cells is not None else sub.source,
                       list(assignment.api),
                       {name: sig.params for name, sig in assignment.api.items()})
    log = CallLog()

    def finish(result: SubmissionResult) -> SubmissionResult:
        result = integrity.apply(result, scan, policy, log)
        # Refusals a worker could not install: those questions were not graded (fail closed).
        integrity.flag_unarmed(result, session.unarmed, policy)
        # Escapes the worker's audit hook refused are hard evidence, whatever the scan says.
        return integrity.withhold_for_escapes(result, session.escapes, policy)

    # What the forbidden routines take (torch's Python implementations of their operators,
    # the Python-level targets and where modules hold them): looked up once by the fork server.
    ops, python = refused_targets(assignment)
    table = table_for(assignment.routines)
    # A Python-level routine's module (SciPy's, seconds and tens of MiB to import) is imported
    # by the fork server for a file that names its package; another file that imports it is
    # refused as it imports it (`guard._late`).
    python = [n for n in python if n.split(".")[0] in sub.source]
    if "checkpoint" in sub.source and "torch" in sub.source:
        # torch's checkpointing imports its compiler's machinery on first use (seconds):
        # imported once by the fork server, not again by each of the submission's workers.
        python.append("torch._dynamo.optimize")
    # Each worker refuses its question's forbidden routines and, ahead of need, those of the
    # questions after it (`WorkerSession._arming`): the first one refuses them all.
    schedule = [(q.id, tuple(question_forbidden(assignment, q.id))) for q in assignment.questions
                if not questions or q.id in questions]
    first = list(dict.fromkeys(n for _, names in schedule for n in names))
    if ops or python or first:
        sandbox.preload(python, ops, (first, [table.plan(n).to_json()
                                              for n in first]))
    session = WorkerSession(sandbox, sub.source, filename,
                            Path(assignment.student_file).stem, list(assignment.api), limits,
                            cells=cells, answers=list(assignment.answers),
                            memo=_INPUT_ENCODINGS, schedule=schedule,
                            texts=[q.id for q in assignment.written], table=table)
    try:
        try:
            loaded = session.start()
        except WorkerStopped as e:
            return finish(failed_everywhere(assignment, shown, e.status, f"importing your file: "
                                            f"{e.message}", include_hidden=include_hidden,
                                            sandbox=sandbox.description))
        if not loaded.ok:
            status, message = _load_failure(loaded.error, loaded.status)
            return finish(failed_everywhere(assignment, shown, status, message,
                                            include_hidden=include_hidden,
                                            sandbox=sandbox.description))
        seen.texts = loaded.texts
        env: dict[str, Any] = {}
        for name in assignment.api:
            info = loaded.defined.get(name)
            if info is None:
                env[name] = None
            elif info.get("kind") == "function":
                env[name] = RemoteFunction(session, name, scan, log, assignment.routines)
            else:
                env[name] = NotAFunction(str(info.get("kind")))
        # Knowledge-check answers: plain data the worker reported, judged here.
        for name in assignment.answers:
            env[name] = loaded.answers.get(name, MISSING)

        def env_for_question(qid: str) -> dict:
            session.begin_question()
            session.question = qid
            log.current = qid
            return env

        forbidden_of = {fn: tuple(names) for qid, names in schedule
                        for fn in assignment.question(qid).functions}
        stand_ins = WorkerStandIns(sandbox, sub.source or "", filename,
                                   Path(assignment.student_file).stem, list(assignment.api),
                                   limits, lambda fn: forbidden_of.get(fn, ()), cells=cells,
                                   schedule=schedule, memo=_INPUT_ENCODINGS, grading=session)
        try:
            result = grade_functions(assignment, shown, env_for_question,
                                     include_hidden=include_hidden, mode=Mode.GRADE,
                                     questions=questions,
                                     sandbox=sandbox.description, stand_ins=stand_ins,
                                     source=_code_of(sub, cells))
        finally:
            stand_ins.close()
        if session.malformed is not None:   # even if a question file swallowed the exception
            raise MalformedReply(session.malformed)
        result.notes += in_cell_order(notes + cell_error_notes(loaded.cell_errors, filename))
        for qid, qnotes in signature_notes(assignment, loaded.defined).items():
            if qid in result.questions and result.questions[qid].status != QuestionStatus.PASSED:
                result.questions[qid].notes += qnotes
        if scan.cut_short:
            result.notes.append("note: your file was too large for the source check "
                                f"({scan.cut_short}); it was graded on the checks made while it "
                                "ran, and flagged for your instructor's review")
    except MalformedReply as e:
        # The row of a forged reply still carries what the source scan found (tampering).
        return finish(malformed_reply(assignment, shown, e.detail, include_hidden=include_hidden,
                                      sandbox=sandbox.description))
    finally:
        session.close()
    result = finish(result)
    result.seconds = time.monotonic() - start
    return result


def check_in_process(assignment: Assignment, path: Path,
                     questions: list[str] | None = None) -> SubmissionResult:
    """A student's own check: public cases only, their code in this process (no sandbox).
    Written answers are collected (`check` says which are unanswered), never scored."""
    shown = str(path)
    try:
        sub = read_submission(path)
    except UnreadableSubmission as e:
        return with_written_answers(assignment, failed_everywhere(
            assignment, shown, CaseStatus.ERROR, str(e), include_hidden=False), text_only(e),
            questions=questions)
    if sub.cells is not None:
        return _check_notebook_in_process(assignment, path, sub, questions)
    source = sub.source
    syntax = _syntax_message(source, str(path))
    if syntax:
        return with_written_answers(assignment, failed_everywhere(
            assignment, shown, CaseStatus.ERROR, syntax, include_hidden=False), sub,
            questions=questions)
    module_name = Path(assignment.student_file).stem
    from ..sandbox.worker import load_student_module

    run_as_written()
    try:
        # The source already read (a regular file, no link): the path is not opened again.
        # Its folder is importable, so helpers next to the file can be imported.
        sys.path.insert(0, str(path.absolute().parent))
        module = load_student_module(source, str(path), module_name)
    except BaseException as exc:  # noqa: BLE001 - the student's import may raise anything
        if isinstance(exc, KeyboardInterrupt):
            raise
        status, message = _load_failure(describe_error(exc), CaseStatus.ERROR)
        return with_written_answers(assignment, failed_everywhere(
            assignment, shown, status, message, include_hidden=False), sub,
            questions=questions)
    env = student_env(assignment, module)
    result = _unchecked_note(grade_functions(assignment, shown, lambda q: env,
                                             include_hidden=False, mode=Mode.CHECK,
                                             questions=questions, source=source))
    return with_written_answers(assignment, result, sub, _module_texts(assignment, module),
                                questions)


def _module_texts(assignment: Assignment, module) -> dict:
    return written_collect.from_module(module.__dict__, [q.id for q in assignment.written])


def _unchecked_note(result: SubmissionResult) -> SubmissionResult:
    """Say so when the check of forbidden routines could not be installed in this process (an
    older torch): the student's check still runs, without it."""
    from ..sandbox.execute import guard_problems

    for problem in guard_problems():
        result.notes.append(f"note: {problem}; library shortcuts were not refused here")
    return result


def student_env(assignment: Assignment, module) -> dict[str, Any]:
    """What the question files receive from a module loaded in this process: the functions
    (a non-callable in a function's place says so) and the answers (MISSING when undefined)."""
    env = {name: getattr(module, name, None) for name in assignment.api}
    for name, value in env.items():
        if value is not None and not callable(value):
            env[name] = NotAFunction(type(value).__name__)
    for name in assignment.answers:
        env[name] = module.__dict__.get(name, MISSING)
    return env


def run_as_written() -> None:
    """`torch.compile` in this process (a student's own check) returns what it is given, as in
    the grader's worker: code a compiler generates would compute past the check of forbidden
    routines, and `check` must find what `grade` finds."""
    import torch

    from ..sandbox.bypass import eager_compile
    from ..sandbox.guard import isolated

    torch.compile = eager_compile(isolated)


def _check_notebook_in_process(assignment: Assignment, path: Path, sub: Submission,
                               questions: list[str] | None) -> SubmissionResult:
    from ..sandbox.worker import load_student_cells

    run_as_written()
    cells, notes = notebook_cells(sub, path.name)
    module, errors = load_student_cells(cells, path.name, Path(assignment.student_file).stem)
    env = student_env(assignment, module)
    result = grade_functions(assignment, str(path), lambda q: env, include_hidden=False,
                             mode=Mode.CHECK, questions=questions, source=_code_of(sub, cells))
    result.notes += in_cell_order(sub.notes + notes + cell_error_notes(errors, path.name))
    return with_written_answers(assignment, _unchecked_note(result), sub,
                                _module_texts(assignment, module), questions)
