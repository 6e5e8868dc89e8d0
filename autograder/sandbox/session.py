"""One submission's worker, seen from the trusted side: load the student's file, serve calls.

The worker is forked by the sandbox's fork server (`client.Sandbox`); this side sends it the
inputs of each call, enforces the time limits (killing the worker through the fork server), and
validates everything the worker sends back before it reaches the verdict.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

from . import wire
from .limits import Limits
from .protocol import decode_outcome
from .client import Sandbox


class WorkerStopped(Exception):
    """The worker is gone or was stopped: status is timeout, memory or error."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class LoadResult:
    ok: bool
    defined: dict
    status: str = "ok"
    error: dict | None = None
    cell_errors: list[dict] = field(default_factory=list)   # notebooks: cells that failed
    answers: dict = field(default_factory=dict)   # answer variables, decoded plain data


class WorkerSession:
    """The worker of one submission: import the student's file once, then serve calls.

    A worker that is killed (time limit) or dies is replaced on the next call, re-importing the
    student's file, so one runaway function costs only its own question.
    """

    def __init__(self, sandbox: Sandbox, source: str, filename: str, module: str,
                 api: list[str], limits: Limits, cells: list[tuple[int, str]] | None = None,
                 answers: list[str] | None = None, tripwires: list[str] | None = None,
                 memo: wire.Memo | None = None):
        self.sandbox, self.source, self.filename = sandbox, source, filename
        self.cells = cells   # a notebook: code cells run one by one, going on after errors
        self.module, self.api, self.limits = module, api, limits
        self.answers = list(answers or [])       # names of values to report (knowledge checks)
        self.tripwires = list(tripwires or [])   # forbidden functions outside torch
        self.memo = memo    # encodings of inputs the grader sends every submission alike
        self.wid: int | None = None
        self.sock: socket.socket | None = None
        self.memory_bytes = 0
        self.started = time.monotonic()
        self.question_deadline = self.started + limits.question_seconds
        self.question_seconds = limits.question_seconds

    # -- deadlines
    def begin_question(self) -> None:
        self.question_deadline = time.monotonic() + self.limits.question_seconds

    def _deadline(self) -> float:
        return min(self.question_deadline, self.started + self.limits.submission_seconds)

    # -- lifecycle
    def load(self) -> LoadResult:
        self.wid, self.sock, self.memory_bytes = self.sandbox.spawn(self.limits)
        self.reader = wire.Reader(self.sock)
        deadline = min(time.monotonic() + self.limits.import_seconds,
                       self.started + self.limits.submission_seconds)
        request = {"op": "load", "filename": self.filename, "module": self.module,
                   "api": self.api, "answers": self.answers, "tripwires": self.tripwires}
        if self.cells is not None:
            request["cells"] = [[n, src] for n, src in self.cells]
        else:
            request["source"] = self.source
        reply, rbuf = self._exchange(request, [], deadline, "importing your file")
        if reply.get("ok"):
            defined = reply.get("defined") if isinstance(reply.get("defined"), dict) else {}
            return LoadResult(True, {str(k)[:80]: v for k, v in list(defined.items())[:64]
                                     if isinstance(v, dict)},
                              cell_errors=_cell_errors(reply.get("cell_errors")),
                              answers=_answers(reply.get("answers"), rbuf, self.answers))
        status = reply.get("status") if reply.get("status") in (
            "error", "memory", "not_implemented") else "error"
        error = decode_outcome({"status": "error", "error": reply.get("error")}, [])["error"]
        return LoadResult(False, {}, status, error)

    def _stop(self, grace: float = 0.0, wait: bool = True) -> dict:
        info = {}
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.wid is not None:
            info = self.sandbox.finish(self.wid, grace, wait)
            self.wid = None
        return info

    def close(self) -> None:
        # Every answer is in: the worker is killed at once, and how it ended is of no interest.
        self._stop(wait=False)

    # -- calls
    def call(self, fn: str, args: tuple, kwargs: dict, *, upstream: Any, want_grad: bool,
             forbidden: list[str]) -> dict:
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
        reply, rbuf = self._exchange(header, buffers, self._deadline(), f"running {fn}")
        try:
            if not reply.get("ok"):
                raise wire.WireError("worker refused the call")
            return decode_outcome(reply.get("outcome"), rbuf)
        except wire.WireError as e:
            self._stop()
            raise WorkerStopped("error", f"{fn} returned something the grader cannot read "
                                         f"({e})") from None

    def _exchange(self, header: dict, buffers: list[bytes], deadline: float,
                  doing: str) -> tuple[dict, list[bytes]]:
        sock = self.sock
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(wire.pack(header, buffers))
            self.reader.deadline = deadline
            return self.reader.message()
        except socket.timeout:
            info = self._stop()
            if info.get("vm_peak", 0) >= 0.9 * self.memory_bytes or info.get("scratch_full"):
                raise WorkerStopped("memory", f"memory limit: {doing} used all the memory "
                                              f"allowed ({self.limits.memory_mb} MB above the "
                                              "baseline) and then ran out of time") from None
            limit = ("the whole submission" if deadline >= self.started +
                     self.limits.submission_seconds - 1e-6 else "this question")
            seconds = (self.limits.submission_seconds if limit == "the whole submission"
                       else self.limits.question_seconds)
            raise WorkerStopped("timeout", f"time limit: {doing} took longer than the "
                                           f"{seconds:g} s allowed for {limit} (an endless "
                                           "loop?)") from None
        except (EOFError, ConnectionError, OSError, wire.WireError):
            info = self._stop(grace=1.0)
            raise WorkerStopped(*_death(info, doing)) from None


def _answers(value: Any, buffers: list[bytes], names: list[str]) -> dict:
    """Decode the worker's report of the answer variables (untrusted data): only the names
    asked for; a value that does not decode becomes an opaque stand-in."""
    out: dict = {}
    if not isinstance(value, dict):
        return out
    for name in names:
        if name not in value:
            continue
        try:
            out[name] = wire.decode(value[name], buffers)
        except (wire.WireError, TypeError, ValueError, OverflowError):
            out[name] = wire.Opaque("value the grader cannot read")
    return out


def _cell_errors(value: Any) -> list[dict]:
    """Validate the worker's report of failing notebook cells (untrusted data)."""
    out: list[dict] = []
    for item in value[:20] if isinstance(value, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("cell"), int) \
                or isinstance(item.get("cell"), bool):
            continue
        status = item.get("status") if item.get("status") in (
            "error", "memory", "not_implemented") else "error"
        try:
            error = decode_outcome({"status": "error", "error": item.get("error")}, [])["error"]
        except wire.WireError:
            error = None
        syntax = item.get("syntax") if isinstance(item.get("syntax"), dict) else None
        if syntax is not None:
            line = syntax.get("line")
            syntax = {"line": line if isinstance(line, int) and not isinstance(line, bool)
                      else None, "text": str(syntax.get("text", ""))[:200],
                      "msg": str(syntax.get("msg", ""))[:200]}
        out.append({"cell": item["cell"], "status": status, "error": error or {},
                    "syntax": syntax})
    return out


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
