"""One submission's workers, seen from the trusted side: load the student's file, serve calls.

Each worker is forked by the sandbox's fork server (`client.Sandbox`) and refuses one set of
forbidden routines for good, from before the student's file is imported in it: the questions
whose forbidden routines differ run in different workers (one live at a time, each importing
the student's file). This side sends each call's inputs, enforces the time limits (killing the
worker through the fork server), and validates everything the worker sends back before it
reaches the verdict.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from . import cgroup, wire
from .evidence import (COMPILER_NAMES, ESCAPES, UNARMED, import_refusal_message, read_end,
                       refusal_message)
from .execute import Chained, iter_arrays, steps_to_data
from .limits import Limits
from .protocol import decode_error, decode_outcome
from .client import Sandbox
from .errors import RunStopped
from .routines import Table

REFUSAL_KINDS = {"forbidden": "routine", "library": "library", "compiler": "compiler"}
NOT_ARMED = UNARMED.index("the refusals did not hold once the file was imported")

MALFORMED = "the grading process of this submission sent a malformed reply"


class WorkerStopped(Exception):
    """The worker is gone or was stopped: status is timeout, memory or error. A refused
    forbidden routine names `routines` (and the `noun` of the inputs: "tensor" or "array"),
    and `how` it was refused ("routine": called; "library": library code computing it;
    "compiler": a compiler inside torch); a question whose refusals could not be installed has
    `kind` "unarmed" and its `reason`."""

    def __init__(self, status: str, message: str, *, routines: list[str] | None = None,
                 noun: str = "tensor", how: str = "routine", kind: str = "", reason: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.routines: list[str] = list(routines or [])
        self.noun = noun
        self.how = how
        self.kind = kind
        self.reason = reason


class Refused(WorkerStopped):
    """The worker ended itself with an exit status only the engine's refusals use (`evidence`):
    `kind` is "forbidden" (`index` into the worker's forbidden names), "library" (library code
    computed the routine at that index), "compiler" (`index` into `evidence.COMPILERS`),
    "escape" (`index` into `evidence.ESCAPES`) or "unarmed" (`index` into `evidence.UNARMED`:
    its refusals could not be installed). A student can end their own worker so too, which
    only costs them."""

    def __init__(self, kind: str, index: int, doing: str):
        super().__init__("forbidden" if kind in REFUSAL_KINDS else
                         {"unarmed": "error"}.get(kind, "integrity"), doing, kind=kind)
        self.index, self.doing = index, doing


class MalformedReply(RunStopped):
    """The worker sent what no honest worker sends (a wrong type anywhere, an undecodable tree,
    a forged frame): the submission ends here, flagged for review. Deliberately not a
    `WorkerStopped`, which costs only the case at hand."""

    def __init__(self, detail: str):
        super().__init__(f"{MALFORMED} ({detail})")
        self.detail = detail


@dataclass
class LoadResult:
    ok: bool
    defined: dict
    status: str = "ok"
    error: dict | None = None
    cell_errors: list[dict] = field(default_factory=list)   # notebooks: cells that failed
    answers: dict = field(default_factory=dict)   # answer variables, decoded plain data
    # text variables (written answers): {name: {"text", "length"} or {"type"}}, validated
    texts: dict = field(default_factory=dict)


class WorkerSession:
    """The workers of one submission: each imports the student's file once, then serves calls.

    A call runs in the worker armed for its question's forbidden routines (`call`); when they
    differ from the live worker's, that worker is stopped and one armed for the new set is
    started. A worker that is killed (time limit) or dies is replaced on the next call,
    re-importing the student's file, so one runaway function costs only its own question.
    """

    def __init__(self, sandbox: Sandbox, source: str, filename: str, module: str,
                 api: list[str], limits: Limits, cells: list[tuple[int, str]] | None = None,
                 answers: list[str] | None = None,
                 memo: wire.Memo | None = None,
                 schedule: list[tuple[str, tuple[str, ...]]] | None = None,
                 texts: list[str] | None = None, table: Table | None = None):
        self.sandbox, self.source, self.filename = sandbox, source, filename
        self.cells = cells   # a notebook: code cells run one by one, going on after errors
        self.module, self.api, self.limits = module, api, limits
        self.answers = list(answers or [])       # names of values to report (knowledge checks)
        self.texts = list(texts or [])           # names of text variables (written answers)
        self.memo = memo    # encodings of inputs the grader sends every submission alike
        self.wid: int | None = None
        self.sock: socket.socket | None = None
        self.memory_bytes = 0
        self.started = time.monotonic()
        self.question_deadline = self.started + limits.question_seconds
        self.question_seconds = limits.question_seconds
        self.malformed: str | None = None   # set once a reply was malformed: nothing more runs
        self.question: str | None = None    # the question being graded (None: the import)
        # Escapes the worker's audit hook refused: [{"escape": words, "question": id or None}]
        self.escapes: list[dict] = []
        # Questions whose worker could not install its refusals: [{"question", "reason"}]
        self.unarmed: list[dict] = []
        self.forbidden: tuple[str, ...] = ()    # what the live worker refuses
        self.failed: dict[tuple[str, ...], WorkerStopped] = {}   # sets whose import failed
        # (question id, its forbidden routines) in grading order: a worker refuses those of its
        # question and of the questions after it (`_arming`). Empty: each its own.
        self.schedule: list[tuple[str, tuple[str, ...]]] = list(schedule or [])
        self.allowed: set[str] = set()     # routines the file calls where they are allowed
        self.imported: dict[str, WorkerStopped] = {}   # routines refused at the top level
        self.unarmed_reason: WorkerStopped | None = None
        self.table = table if table is not None else Table()   # what computes each routine
        # A compiler refused at the top level (it costs every question that forbids anything),
        # or refused ahead of need in a question that forbids nothing.
        self.compiler_at_import: WorkerStopped | None = None
        self.plain = False

    # -- deadlines
    def begin_question(self) -> None:
        self.question_deadline = time.monotonic() + self.limits.question_seconds

    def _deadline(self) -> float:
        return min(self.question_deadline, self.started + self.limits.submission_seconds)

    # -- lifecycle
    # -- which worker
    def _related(self, routine: str, keep: tuple[str, ...]) -> set[str]:
        """`routine` and every name outside `keep` that shares what refuses it: what a worker
        no longer needs to refuse once the file was seen calling `routine` where it is allowed
        (all of them end in the same refusals)."""
        return self.table.related(routine, [n for n in self._everything() if n not in keep])

    def _everything(self) -> list[str]:
        return [n for _, names in self.schedule for n in names]

    def _arming(self, question: tuple[str, ...]) -> tuple[str, ...]:
        """What a new worker refuses for a question forbidding `question`: those, and ahead of
        need those of the questions after it (one worker then serves them all), less what the
        file was seen calling where it is allowed. Refusing more than a question forbids is
        never evidence against it: such a refusal only sends the call to another worker."""
        if self.plain and not question:
            return ()
        names = list(question)
        ahead = self.question is None
        for qid, routines in self.schedule:
            if ahead:
                names += [n for n in routines if n not in names and n not in self.allowed]
            ahead = ahead or qid == self.question
        return tuple(names)

    def start(self) -> LoadResult:
        """The first worker, armed for every question's forbidden routines: what the file
        defines (and the first questions' calls)."""
        return self._load_for(())

    def _load_for(self, question: tuple[str, ...]) -> LoadResult:
        """Start a worker for a question forbidding `question`. A routine the file calls at its
        top level is refused at import: that costs the questions forbidding it (`imported`), and
        the file is imported again in a worker that does not refuse it."""
        while True:
            # A refusal names the first routine of the worker's list that maps the operator, and
            # a worker lists its question's routines first: one of the question's is named when
            # the question forbids what the top level called.
            for routine, stopped in self.imported.items():
                if routine in question:
                    raise stopped
            if self.compiler_at_import is not None:
                if question:
                    raise self.compiler_at_import
                self.plain = True
            if self.unarmed_reason is not None and any(
                    not n.startswith("autograd.") for n in question):
                raise self._unarmed_stop(self.unarmed_reason)
            arming = self._arming(question) if self.unarmed_reason is None else ()
            try:
                return self.load(arming)
            except Refused as e:
                if e.kind == "unarmed" and arming:
                    # Fail closed: no question that forbids something is graded; the file is
                    # imported again, refusing nothing, for the others.
                    self.unarmed_reason = UNARMED[e.index]
                    continue
                if e.kind == "compiler":
                    self.compiler_at_import = self._refused(e, list(arming))
                    continue
                if e.kind not in ("forbidden", "library") or e.index >= len(arming):
                    raise self._refused(e, list(arming)) from None
                routine = arming[e.index]
                self.imported[routine] = self._refused(e, list(arming))
                self.allowed |= self._related(routine, ())

    def load(self, forbidden: tuple[str, ...] = ()) -> LoadResult:
        """Start a worker refusing `forbidden` and import the file in it. A refusal raises
        `Refused` (the caller decides what it means)."""
        self._refuse_if_malformed()
        self._stop(wait=False)
        self.wid, self.sock, self.memory_bytes = self.sandbox.spawn(
            self.limits, forbidden, [self.table.plan(n).to_json() for n in forbidden])
        self.forbidden = forbidden
        self.reader = wire.Reader(self.sock)
        deadline = min(time.monotonic() + self.limits.import_seconds,
                       self.started + self.limits.submission_seconds)
        request = {"op": "load", "filename": self.filename, "module": self.module,
                   "api": self.api, "answers": self.answers}
        if self.texts:
            request["texts"] = self.texts
        if self.cells is not None:
            request["cells"] = [[n, src] for n, src in self.cells]
        else:
            request["source"] = self.source
        reply, rbuf = self._exchange(request, [], deadline, "importing your file")
        if forbidden and not self.sandbox.armed(self.wid):
            # The import never handed the worker back (or the refusals could not be made to
            # hold): nothing is graded in it.
            self._stop()
            raise Refused("unarmed", NOT_ARMED, "importing your file")
        try:
            return _load_result(reply, rbuf, self.api, self.answers, self.texts)
        except Exception as e:  # noqa: BLE001 - untrusted data: every failure is malformed
            self._malformed(e)

    def _switch(self, question: tuple[str, ...]) -> None:
        """Have a live worker that refuses at least `question`, importing the student's file in
        a new one when needed. A file that no longer imports fails the same way at once for the
        question's other cases."""
        if question in self.failed:
            failed = self.failed[question]
            if failed.kind == "unarmed":   # this question is flagged too
                raise self._unarmed_stop(failed.reason)
            raise failed
        if self.sock is not None and set(question) <= set(self.forbidden) and not (
                self.plain and not question and self.forbidden):
            return
        try:
            loaded = self._load_for(question)
        except WorkerStopped as e:
            if e.status in ("forbidden", "error", "integrity"):
                self.failed[question] = e
            raise
        if not loaded.ok:
            self._stop()
            err = loaded.error or {}
            stopped = WorkerStopped("error", "your file failed to import again for this "
                                             f"question ({err.get('type')}: "
                                             f"{err.get('message')})")
            self.failed[question] = stopped
            raise stopped

    def _stop(self, grace: float = 0.0, wait: bool = True) -> dict:
        info = {}
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.wid is not None:
            info = self.sandbox.finish(self.wid, grace, wait)
            self.wid = None
        return info

    def _refuse_if_malformed(self) -> None:
        if self.malformed is not None:
            raise MalformedReply(self.malformed)

    def _malformed(self, error: BaseException | str) -> NoReturn:
        """End this submission's worker for good: its reply was malformed."""
        detail = error if isinstance(error, str) else (
            str(error)[:200] if isinstance(error, wire.WireError) else type(error).__name__)
        self._stop()
        self.malformed = detail
        raise MalformedReply(detail)

    def close(self) -> None:
        # Every answer is in: the worker is killed at once, and how it ended is of no interest.
        self._stop(wait=False)

    def hand_over(self, other: "WorkerSession") -> bool:
        """Give the live worker to `other`, a session of the same file with state of its own
        (the diagnosis's re-runs, once grading is over): what happens in it from here on is
        recorded there, never here. False when there is none to give (it stopped, or a reply
        was malformed)."""
        if self.sock is None or self.wid is None or self.malformed is not None:
            return False
        other._stop(wait=False)
        other.wid, other.sock, other.reader = self.wid, self.sock, self.reader
        other.memory_bytes, other.forbidden = self.memory_bytes, self.forbidden
        self.wid, self.sock = None, None
        return True

    def add_entry(self) -> None:
        """Have the live worker add the stand-ins' entry to the module it imported
        (`stand_in_entry.add_entry`): raises WorkerStopped (or MalformedReply) if it cannot."""
        reply, _ = self._exchange({"op": "entry"}, [], self._deadline(),
                                  "adding the re-runs' entry")
        if reply.get("ok") is not True:
            raise WorkerStopped("error", "the worker could not add the re-runs' entry")

    # -- calls
    def call(self, fn: str, args: tuple, kwargs: dict, *, upstream: Any, want_grad: bool,
             forbidden: list[str] | None) -> dict:
        """Run `fn` in the worker armed for `forbidden` (None: the live worker's set, for a
        call a question file makes outside its checks)."""
        self._refuse_if_malformed()
        question = self.forbidden if forbidden is None else tuple(forbidden)
        buffers: list[bytes] = []
        args, kwargs, chained = self._chained(tuple(args), dict(kwargs), buffers)
        header = {"op": "call", "fn": fn,
                  "inputs": wire.encode((tuple(args), dict(kwargs)), buffers, memo=self.memo),
                  "upstream": wire.encode(upstream, buffers, memo=self.memo),
                  "want_grad": want_grad}
        if chained:
            header["chained"] = chained
        while True:
            self._switch(question)
            armed = self.forbidden
            try:
                reply, rbuf = self._exchange(header, buffers, self._deadline(), f"running {fn}")
                break
            except Refused as e:
                if e.kind == "compiler" and not question:
                    # Refused ahead of need: nothing is forbidden here, the call runs again in
                    # a worker that refuses nothing.
                    self.plain = True
                    continue
                routine = armed[e.index] if e.kind in ("forbidden", "library") and \
                    e.index < len(armed) else None
                if routine is not None and routine not in question:
                    # Refused ahead of need, where this question allows it: the call runs
                    # again in a worker that does not refuse it.
                    self.allowed |= self._related(routine, question)
                    continue
                numpy = any(type(a).__module__ == "numpy" for _, a in iter_arrays((args, kwargs)))
                raise self._refused(e, list(armed), fn, "array" if numpy else "tensor") from None
        try:
            if reply.get("ok") is not True:
                raise wire.WireError("the worker refused a call")
            outcome = decode_outcome(reply.get("outcome"), rbuf, wire.Budget(release=True))
        except Exception as e:  # noqa: BLE001 - untrusted data: every failure is malformed
            self._malformed(e)
        # The worker names the library nodes of its own routines in the result's graph: only
        # this question's count.
        outcome["forbidden"] = [n for n in outcome.get("forbidden") or [] if n in question]
        return outcome

    def _chained(self, args: tuple, kwargs: dict, buffers: list[bytes]
                 ) -> tuple[tuple, dict, list[dict]]:
        """The arguments without their chained inputs (`execute.Chained`), and what the worker
        needs to make each in their place: the function's name, its inputs, the item."""
        specs = []
        for at, chain in [((0, i), a) for i, a in enumerate(args) if isinstance(a, Chained)] + \
                [((1, k), v) for k, v in kwargs.items() if isinstance(v, Chained)]:
            specs.append({"fn": chain.name, "at": list(at), "pick": steps_to_data(chain.pick),
                          "inputs": wire.encode((chain.args, chain.kwargs), buffers,
                                                memo=self.memo)})
            if at[0] == 0:
                args = tuple(None if i == at[1] else a for i, a in enumerate(args))
            else:
                kwargs = {**kwargs, at[1]: None}
        return args, kwargs, specs

    def _unarmed_stop(self, reason: str) -> WorkerStopped:
        """This question is not graded: its refusals could not be installed (recorded for the
        row's review flag, `integrity.flag_unarmed`)."""
        if not any(x["question"] == self.question for x in self.unarmed):
            self.unarmed.append({"question": self.question, "reason": reason})
        return WorkerStopped("error", unarmed_message(reason), kind="unarmed", reason=reason)

    def _refused(self, e: Refused, forbidden: list[str], fn: str | None = None,
                 noun: str = "tensor") -> WorkerStopped:
        """What a refusal means for this case: a forbidden call (named in the assignment's words),
        refusals that could not be installed (the question is not graded, and flagged), or an
        escape, recorded for `integrity.withhold_for_escapes`."""
        if e.kind in REFUSAL_KINDS:
            how = REFUSAL_KINDS[e.kind]
            if e.kind == "compiler":
                routine = COMPILER_NAMES[e.index] if e.index < len(COMPILER_NAMES) else \
                    "a compiler"
            else:
                routine = forbidden[e.index] if e.index < len(forbidden) else \
                    "a forbidden routine"
            shown = self.table.declared.shown(routine)
            message = import_refusal_message(shown, how) if fn is None else refusal_message(
                fn, shown, how, noun, self.table.declared.explain(routine))
            return WorkerStopped("forbidden", message, routines=[routine], noun=noun, how=how)
        if e.kind == "unarmed":
            return self._unarmed_stop(UNARMED[e.index])
        what = ESCAPES[e.index]
        question = self.question if fn is not None else None
        if not any(x["escape"] == what and x["question"] == question for x in self.escapes):
            self.escapes.append({"escape": what, "question": question})
        return WorkerStopped("integrity", f"integrity: the grader refused {what} while "
                                          f"{e.doing}; flagged for review")

    def _exchange(self, header: dict, buffers: list[bytes], deadline: float,
                  doing: str) -> tuple[dict, list[bytes]]:
        sock = self.sock
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(wire.pack(header, buffers))
            self.reader.deadline = deadline
            return self.reader.message()
        except socket.timeout:
            # Read before the worker is killed (that frees what it held): a container at its
            # memory limit evicts the code every process runs, and everything crawls.
            crowded = cgroup.pressure()
            info = self._stop()
            if info.get("vm_peak", 0) >= 0.9 * self.memory_bytes or info.get("scratch_full"):
                raise WorkerStopped("memory", f"memory limit: {doing} used all the memory "
                                              f"allowed ({self.limits.memory_mb} MB above the "
                                              "baseline) and then ran out of time") from None
            if crowded is not None:
                raise WorkerStopped("memory", f"memory limit: {doing} ran out of time while the "
                                              "grader's container was out of memory ("
                                              f"{cgroup.describe(crowded)} in use); hold less "
                                              "memory (large tensors kept at the top level of "
                                              "your file count too)") from None
            limit = ("the whole submission" if deadline >= self.started +
                     self.limits.submission_seconds - 1e-6 else "this question")
            seconds = (self.limits.submission_seconds if limit == "the whole submission"
                       else self.limits.question_seconds)
            raise WorkerStopped("timeout", f"time limit: {doing} took longer than the "
                                           f"{seconds:g} s allowed for {limit} (an endless "
                                           "loop?)") from None
        except wire.WireError as e:    # a frame no honest worker writes
            self._malformed(e)
        except (EOFError, ConnectionError, OSError):
            info = self._stop(grace=1.0)
            evidence = read_end(info)
            if evidence is not None:
                raise Refused(evidence[0], evidence[1], doing) from None
            raise WorkerStopped(*_death(info, doing)) from None


# -- validation of the load reply (untrusted data): each raises on anything an honest worker
# (worker.py) does not send, and the caller turns that into MalformedReply.

LOAD_STATUSES = ("error", "memory", "not_implemented")


def _load_result(reply: dict, buffers: list[bytes], api: list[str],
                 answer_names: list[str], text_names: list[str] = ()) -> LoadResult:
    ok = reply.get("ok")
    if ok is True:
        return LoadResult(True, _defined(reply.get("defined"), api),
                          cell_errors=_cell_errors(reply.get("cell_errors")),
                          answers=_answers(reply.get("answers"), buffers, answer_names),
                          texts=_texts(reply.get("texts"), list(text_names)))
    if ok is False:
        status = reply.get("status")
        if not isinstance(status, str) or status not in LOAD_STATUSES:
            raise wire.WireError("malformed load status")
        _syntax(reply.get("syntax"))
        return LoadResult(False, {}, status, decode_error(reply.get("error")))
    raise wire.WireError("malformed load reply")


def _defined(value: Any, api: list[str]) -> dict:
    """The worker's report of the API names it found: {name: {"kind", "params"}}."""
    if not isinstance(value, dict):
        raise wire.WireError("malformed list of definitions")
    out = {}
    for name, entry in value.items():
        if name not in api or not isinstance(entry, dict):
            raise wire.WireError("malformed definition")
        kind, params = entry.get("kind"), entry.get("params")
        if not isinstance(kind, str) or len(kind) > 60:
            raise wire.WireError("malformed kind of a definition")
        if params is not None and (not isinstance(params, list) or len(params) > 16 or not all(
                isinstance(p, str) and len(p) <= 60 for p in params)):
            raise wire.WireError("parameters that are not a list of names")
        out[name] = {"kind": kind, "params": None if params is None else list(params)}
    return out


def _answers(value: Any, buffers: list[bytes], names: list[str]) -> dict:
    """Decode the worker's report of the answer variables: only names asked for."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not set(value) <= set(names):
        raise wire.WireError("malformed answers")
    budget = wire.Budget(release=True)
    return {name: wire.decode(value[name], buffers, budget=budget)
            for name in names if name in value}


MAX_TEXT_CHARS = 20_000   # as the worker cuts them (worker.MAX_TEXT_CHARS)


def _texts(value: Any, names: list[str]) -> dict:
    """Validate the worker's report of text variables: only names asked for, each a str of at
    most MAX_TEXT_CHARS with its full length, or the name of another type."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not set(value) <= set(names):
        raise wire.WireError("malformed texts")
    out = {}
    for name, entry in value.items():
        if not isinstance(entry, dict):
            raise wire.WireError("malformed text")
        if set(entry) == {"text", "length"}:
            text, length = entry["text"], entry["length"]
            if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS or \
                    type(length) is not int or not len(text) <= length < 2**40:
                raise wire.WireError("malformed text")
            out[name] = {"text": text, "length": length}
        elif set(entry) == {"type"} and isinstance(entry["type"], str) and \
                len(entry["type"]) <= 60:
            out[name] = {"type": entry["type"]}
        else:
            raise wire.WireError("malformed text")
    return out


MAX_CELL_ERRORS = 20


def _cell_errors(value: Any) -> list[dict]:
    """Validate the worker's report of failing notebook cells."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise wire.WireError("malformed cell errors")
    out: list[dict] = []
    for item in value[:MAX_CELL_ERRORS]:
        if not isinstance(item, dict):
            raise wire.WireError("malformed cell error")
        cell, status = item.get("cell"), item.get("status")
        if not isinstance(cell, int) or isinstance(cell, bool) or not 0 <= cell <= 10**6:
            raise wire.WireError("malformed cell number")
        if not isinstance(status, str) or status not in LOAD_STATUSES:
            raise wire.WireError("malformed cell status")
        out.append({"cell": cell, "status": status,
                    "error": decode_error(item.get("error")) or {},
                    "syntax": _syntax(item.get("syntax"))})
    return out


def _syntax(value: Any) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise wire.WireError("malformed syntax error")
    line = value.get("line")
    if line is not None and (not isinstance(line, int) or isinstance(line, bool)
                             or not 0 <= line <= 10**7):
        raise wire.WireError("malformed syntax error line")
    text, msg = value.get("text", ""), value.get("msg", "")
    if not isinstance(text, str) or not isinstance(msg, str):
        raise wire.WireError("malformed syntax error text")
    return {"line": line, "text": text[:200], "msg": msg[:200]}


_SIGNALS = {9: "killed", 11: "crashed (segmentation fault; endless recursion?)", 6: "aborted",
            24: "stopped by the CPU time limit", 25: "stopped by the file size limit",
            8: "crashed (arithmetic error)"}


def _death(info: dict, doing: str) -> tuple[str, str]:
    if info.get("cgroup_oom"):
        return "memory", (f"memory limit: {doing} used more memory than the sandbox allows "
                          "(its memory cgroup, which counts every kind of memory) and was "
                          "stopped")
    if "exit" in info:
        return "error", (f"your code ended the process (exit code {info['exit']}) while "
                         f"{doing}; do not call sys.exit, os._exit or similar")
    sig = info.get("signal")
    if sig == 9:
        return "memory", f"the process was killed while {doing} (out of memory?)"
    if sig == 7:
        # A bus error is what touching a shared or file mapping past a full tmpfs gives.
        return "memory", (f"memory limit: {doing} ran out of space for shared memory or "
                          "files (bus error)")
    if sig == 24:
        return "timeout", f"the CPU time limit stopped {doing}"
    if sig is None:
        return "error", f"the process stopped unexpectedly while {doing}"
    what = _SIGNALS.get(sig, f"ended by signal {sig}")
    return "error", f"the process {what} while {doing}"


def unarmed_message(reason: str) -> str:
    return (f"the grader could not install its check of forbidden routines for this question "
            f"({reason}), so the question was not graded; flagged for your instructor's review")


def forbidden_message(fn: str, routines: list[str], noun: str = "tensor",
                      source: list[str] = (), how: str = "routine", explain: str = "") -> str:
    """The feedback of a forbidden call, naming the routine as the assignment names it, and
    where the source shows the route when the trusted scan found it."""
    return refusal_message(fn, routines[0], how, noun, explain, list(source))
