"""One submission's worker, seen from the trusted side: load the student's file, serve calls.

The worker is forked by the sandbox's fork server (`client.Sandbox`); this side sends it the
inputs of each call, enforces the time limits (killing the worker through the fork server), and
validates everything the worker sends back before it reaches the verdict.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from . import cgroup, wire
from .evidence import ESCAPES, read_exit
from .execute import iter_arrays
from .limits import Limits
from .protocol import decode_error, decode_outcome
from .client import Sandbox

MALFORMED = "the grading process of this submission sent a malformed reply"


class WorkerStopped(Exception):
    """The worker is gone or was stopped: status is timeout, memory or error."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Refused(WorkerStopped):
    """The worker ended itself with an exit status only the engine's refusals use (`evidence`):
    `kind` is "forbidden" (`index` into the call's forbidden names) or "escape" (`index` into
    `evidence.ESCAPES`). A student can end their own worker so too, which only costs them."""

    def __init__(self, kind: str, index: int, doing: str):
        super().__init__("forbidden" if kind == "forbidden" else "integrity", doing)
        self.kind, self.index, self.doing = kind, index, doing


class MalformedReply(Exception):
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
    """The worker of one submission: import the student's file once, then serve calls.

    A worker that is killed (time limit) or dies is replaced on the next call, re-importing the
    student's file, so one runaway function costs only its own question.
    """

    def __init__(self, sandbox: Sandbox, source: str, filename: str, module: str,
                 api: list[str], limits: Limits, cells: list[tuple[int, str]] | None = None,
                 answers: list[str] | None = None, tripwires: list[str] | None = None,
                 memo: wire.Memo | None = None, texts: list[str] | None = None):
        self.sandbox, self.source, self.filename = sandbox, source, filename
        self.cells = cells   # a notebook: code cells run one by one, going on after errors
        self.module, self.api, self.limits = module, api, limits
        self.answers = list(answers or [])       # names of values to report (knowledge checks)
        self.texts = list(texts or [])           # names of text variables (written answers)
        self.tripwires = list(tripwires or [])   # every forbidden routine of the assignment
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
        self.unchecked: str | None = None   # a check the worker could not install, if any

    # -- deadlines
    def begin_question(self) -> None:
        self.question_deadline = time.monotonic() + self.limits.question_seconds

    def _deadline(self) -> float:
        return min(self.question_deadline, self.started + self.limits.submission_seconds)

    # -- lifecycle
    def load(self) -> LoadResult:
        self._refuse_if_malformed()
        self.wid, self.sock, self.memory_bytes = self.sandbox.spawn(self.limits)
        self.reader = wire.Reader(self.sock)
        deadline = min(time.monotonic() + self.limits.import_seconds,
                       self.started + self.limits.submission_seconds)
        request = {"op": "load", "filename": self.filename, "module": self.module,
                   "api": self.api, "answers": self.answers, "forbidden": self.tripwires,
                   "audit": bool(self.limits.audit_hook)}
        if self.texts:
            request["texts"] = self.texts
        if self.cells is not None:
            request["cells"] = [[n, src] for n, src in self.cells]
        else:
            request["source"] = self.source
        try:
            reply, rbuf = self._exchange(request, [], deadline, "importing your file")
        except Refused as e:
            raise self._refused(e, []) from None
        try:
            return _load_result(reply, rbuf, self.api, self.answers, self.texts)
        except Exception as e:  # noqa: BLE001 - untrusted data: every failure is malformed
            self._malformed(e)

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

    # -- calls
    def call(self, fn: str, args: tuple, kwargs: dict, *, upstream: Any, want_grad: bool,
             forbidden: list[str]) -> dict:
        self._refuse_if_malformed()
        if self.sock is None:
            loaded = self.load()
            if not loaded.ok:
                self._stop()
                raise WorkerStopped("error", "your file failed to import again after the "
                                             "previous stop")
        buffers: list[bytes] = []
        header = {"op": "call", "fn": fn,
                  "inputs": wire.encode((tuple(args), dict(kwargs)), buffers, memo=self.memo),
                  "upstream": wire.encode(upstream, buffers, memo=self.memo),
                  "want_grad": want_grad,
                  "forbidden": list(forbidden)}
        try:
            reply, rbuf = self._exchange(header, buffers, self._deadline(), f"running {fn}")
        except Refused as e:
            numpy = any(type(a).__module__ == "numpy" for _, a in iter_arrays((args, kwargs)))
            raise self._refused(e, list(forbidden), fn, "array" if numpy else "tensor") from None
        try:
            if reply.get("ok") is not True:
                raise wire.WireError("the worker refused a call")
            return decode_outcome(reply.get("outcome"), rbuf, wire.Budget(release=True))
        except Exception as e:  # noqa: BLE001 - untrusted data: every failure is malformed
            self._malformed(e)

    def _refused(self, e: Refused, forbidden: list[str], fn: str | None = None,
                 noun: str = "tensor") -> WorkerStopped:
        """What a refusal means for this case: a forbidden call (named in the assignment's words),
        or an escape, recorded for `integrity.withhold_for_escapes`."""
        if e.kind == "forbidden":
            routine = forbidden[e.index] if e.index < len(forbidden) else "a forbidden routine"
            stopped = WorkerStopped("forbidden", forbidden_message(fn or "your code", [routine],
                                                                  noun))
            stopped.routines, stopped.noun = [routine], noun
            return stopped
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
            evidence = read_exit(info.get("exit"))
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


def forbidden_message(fn: str, routines: list[str], noun: str = "tensor",
                      source: list[str] = ()) -> str:
    """The feedback of a forbidden call, naming the routines as the assignment names them, and
    where the source shows the route when the trusted scan found it."""
    names = ", ".join(f"`{r}`" for r in routines)
    shows = f" (your source: {'; '.join(source[:3])})" if source else ""
    return (f"{fn} called {names}{shows}, which this question asks you to write yourself; "
            f"implement it with basic {noun} operations")
