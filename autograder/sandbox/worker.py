"""The untrusted side: a worker process that imports one student's file and serves calls.

It is forked by the fork server (see `forkserver.py`) with limits already set and privileges dropped, and
talks to the trusted grader over one socket. It holds no reference code, no expected values and
no hidden test definitions: only the inputs of each call. Everything it sends back is data that
the trusted side validates (`protocol.decode_outcome`).

Before the student's source exists in it, the worker installs the refusals of its forbidden
routines for good (`guard.install`, from the names and plans the trusted side put in the fork
request: one worker per distinct set of a submission's questions), then its audit hook
(`audit.py`), takes the engine's modules out of `sys.modules` and gives the process a fresh
`__main__`. Once the student's file is imported the refusals hold (`armed.arm`), before the
load reply is sent. No later message changes what is refused, and nothing is kept that could
undo it; a refusal ends the worker with an exit status naming it (`evidence.py`), which no
reply can hide. A worker that cannot install its refusals ends before the student's source is
imported (fail closed).
"""
from __future__ import annotations

import json
import linecache
import os
import socket
import sys
import types
from typing import Any

from . import armed, audit, guard, wire
from .evidence import UNARMED_EXIT, exit_code
from .execute import (STOP_CODES, Chained, describe_error, is_memory_error, run_call,
                      steps_from_data)
from .protocol import encode_outcome_safely
from .routines import Plan
from .stand_in_entry import add_entry

# Taken before any student code runs: what the student rebinds later changes nothing here.
_exit = os._exit
# `_posixsubprocess.fork_exec`'s stand-in: it raises the audit event the original lacks, so the
# hook judges who asked (the student: hard evidence; a library: an error), and starts nothing.
REFUSE_PROCESS = ('def fork_exec(*args, **kwargs):\n'
                  '    "@audit"("os.posix_spawn", None, None, None)\n'
                  '    raise "@error"("the grader\'s worker starts no other process")\n')
ENGINE = "autograder"


def _engine_modules() -> list[str]:
    return [n for n in sys.modules if n == ENGINE or n.startswith(ENGINE + ".")]


# The engine's classes per module, with the size of the namespace they were read from: read once
# in the fork server (`engine_classes`), so that a worker does not walk every module's namespace
# again (about 2 ms a worker, most of it copying the pages its reads touch).
_classes_of: dict[str, tuple[int, list[type]]] = {}


def engine_classes() -> list[type]:
    """Every class defined in an engine module loaded now (a module read before, whose
    namespace has not grown since, is not read again)."""
    found: list[type] = []
    for name in _engine_modules():
        namespace = vars(sys.modules[name])
        known = _classes_of.get(name)
        if known is None or known[0] != len(namespace):
            known = _classes_of[name] = (len(namespace), [
                v for v in namespace.values()
                if isinstance(v, type) and str(getattr(v, "__module__", "")).startswith(ENGINE)])
        found += known[1]
    return found


def protect(tokens: dict | None = None, on_import=None) -> None:
    """Put the engine out of the student's reach, just before their source runs: the audit hook
    (refusing frames, gc scans, ctypes, code building, ...), no engine module in `sys.modules`
    (importing one again is refused too), a `__main__` emptied of the fork server's names. Once per
    worker process; never in the student's own process (`autograder check`)."""
    classes = engine_classes()
    # The one way to start a process that raises no audit event of its own (subprocess and
    # multiprocessing use it): replaced by a refusal, and importing a fresh copy is refused.
    import _posixsubprocess

    _posixsubprocess.fork_exec = guard.isolated(REFUSE_PROCESS, {
        "@audit": sys.audit, "@error": PermissionError}, "fork_exec")
    audit.install(_exit, trusted=guard.own_code(), engine_classes=classes, tokens=tokens,
                  on_import=on_import)
    for name in _engine_modules():
        del sys.modules[name]
    # The fork server's `__main__` holds its entry point, and libraries keep a reference to
    # that module object (dill does): emptied, not merely replaced.
    main = sys.modules.get("__main__")
    if main is None:
        main = sys.modules["__main__"] = types.ModuleType("__main__")
    vars(main).clear()
    vars(main).update({"__name__": "__main__", "__builtins__": sys.modules["builtins"]})


class Channel:
    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.reader = wire.Reader(sock)

    def recv(self) -> tuple[dict, list[bytes]]:
        return self.reader.message()

    def send(self, header: dict, buffers: list[bytes] = ()) -> None:
        self.sock.sendall(wire.pack(header, list(buffers)))


def load_student_module(source: str, filename: str, module_name: str) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    # Tracebacks quote the student's lines from linecache, since the file is not on disk.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


MAX_CELL_ERRORS = 20


def load_student_cells(cells: list, filename: str, module_name: str
                       ) -> tuple[types.ModuleType, list[dict]]:
    """Run a notebook's code cells one by one in one module, going on after a cell fails.

    `cells` holds (number, source) pairs. Returns the module and, per failing cell, its number,
    a status and the student's view of the error (its line counts from the cell's first line).
    """
    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module
    errors: list[dict] = []
    for number, source in cells:
        cell_file = f"cell {int(number)} of {filename}"
        linecache.cache[cell_file] = (len(source), None, source.splitlines(True), cell_file)
        try:
            exec(compile(source, cell_file, "exec", dont_inherit=True), module.__dict__)
        except BaseException as exc:  # noqa: BLE001 - a cell may raise anything; the next runs
            if len(errors) < MAX_CELL_ERRORS:
                try:
                    status = "memory" if is_memory_error(exc) else (
                        "not_implemented" if isinstance(exc, NotImplementedError) else "error")
                    errors.append({"cell": int(number), "status": status,
                                   "error": describe_error(exc), "syntax": _syntax_info(exc)})
                except BaseException:  # noqa: BLE001 - an exception whose str() raises
                    errors.append({"cell": int(number), "status": "error",
                                   "error": {"type": "Exception", "message": "(unprintable)"},
                                   "syntax": None})
    return module, errors


def describe_param(p) -> str:
    """One parameter as the trusted side reads it (`autograder.intake.signatures`): "name",
    "name=default", "*name", "**name", "kw:name[=default]" (keyword-only), "pos:name[=default]"
    (positional-only); at most 60 characters."""
    import inspect

    prefix = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**",
              inspect.Parameter.KEYWORD_ONLY: "kw:",
              inspect.Parameter.POSITIONAL_ONLY: "pos:"}.get(p.kind, "")
    text = prefix + str(p.name)[:40]
    if p.default is not inspect.Parameter.empty:
        try:
            default = repr(p.default)
        except Exception:  # noqa: BLE001 - a student's object: its repr may raise
            default = "..."
        text += "=" + (default if len(default) <= 16 else "...")
    return text[:60]


def describe_api(module: types.ModuleType, api: list[str]) -> dict:
    import inspect

    found = {}
    for name in api:
        value = module.__dict__.get(name, None)
        if value is None and name not in module.__dict__:
            continue
        entry = {"kind": "function" if callable(value) else type(value).__name__[:60]}
        try:
            entry["params"] = [describe_param(p) for p in
                               inspect.signature(value).parameters.values()][:16]
        except (TypeError, ValueError):
            entry["params"] = None
        found[name] = entry
    return found


MAX_ANSWER_BYTES = 64 * 1024
MAX_ANSWERS = 64


def describe_answers(module: types.ModuleType, names: list[str],
                     buffers: list[bytes]) -> dict:
    """The student's answer variables as plain data (wire trees), each capped in size; a name
    the module does not define is left out. The trusted side judges them."""
    found = {}
    for name in names[:MAX_ANSWERS]:
        if name not in module.__dict__:
            continue
        mine: list[bytes] = []
        try:
            node = wire.encode(module.__dict__[name], mine)
            json_size = len(json.dumps(node))
        except BaseException:  # noqa: BLE001 - an object that resists encoding
            node, mine, json_size = {"t": "other", "type": "value the grader cannot read"}, [], 0
        if json_size + sum(len(b) for b in mine) > MAX_ANSWER_BYTES:
            node, mine = {"t": "other", "type": "value too large to check"}, []
        if mine:   # renumber this answer's buffers after those already collected
            node = _shift_buffers(node, len(buffers))
            buffers.extend(mine)
        found[name] = node
    return found


# Text variables (written answers): the first MAX_TEXT_CHARS characters and the full length.
MAX_TEXT_CHARS = 20_000
MAX_TEXTS = 16


def describe_texts(module: types.ModuleType, names: list[str]) -> dict:
    """The student's text variables, each {"text", "length"} when it is a plain str, else
    {"type": its type's name}; a name the module does not define is left out. The trusted side
    takes them as text and nothing more."""
    found = {}
    for name in names[:MAX_TEXTS]:
        if name not in module.__dict__:
            continue
        value = module.__dict__[name]
        if type(value) is str:   # noqa: E721 - a subclass could answer len() or slicing itself
            found[name] = {"text": str.__getitem__(value, slice(0, MAX_TEXT_CHARS)),
                           "length": str.__len__(value)}
        else:
            found[name] = {"type": str(type(value).__name__)[:60]}
    return found


def _shift_buffers(node, offset: int):
    if isinstance(node, dict):
        out = {k: _shift_buffers(v, offset) for k, v in node.items()}
        if isinstance(node.get("buf"), int) and node.get("t") in ("tensor", "ndarray"):
            out["buf"] = node["buf"] + offset
        return out
    if isinstance(node, list):
        return [_shift_buffers(v, offset) for v in node]
    return node


def serve(sock: socket.socket, output_cap: int, forbidden: tuple[str, ...] = ()) -> None:
    """Main loop of a worker; returns when the trusted side closes the socket. `forbidden`:
    the routines this worker refuses (already installed), for the autograd nodes the outcome
    names beside the refusals."""
    # Prints go nowhere (descriptors 1 and 2 are /dev/null already), through plain file
    # objects: nothing of the engine's own sits in `sys.stdout`.
    sys.stdout = open(os.devnull, "w", encoding="utf-8", errors="replace")
    sys.stderr = sys.stdout
    channel = Channel(sock)
    module = None
    made_from: tuple = ("", None, None)    # the file name, source and cells the module ran
    api: list[str] = []
    while True:
        try:
            header, buffers = channel.recv()
        except (EOFError, OSError, wire.WireError):
            return
        op = header.get("op")
        if op == "load":
            api = [str(a) for a in header.get("api", [])]
            answers = [str(a) for a in header.get("answers", [])]
            texts = [str(a) for a in header.get("texts", [])]
            try:
                cell_errors = None
                if isinstance(header.get("cells"), list):
                    module, cell_errors = load_student_cells(header["cells"], header["filename"],
                                                             header["module"])
                else:
                    module = load_student_module(header["source"], header["filename"],
                                                 header["module"])
                made_from = (header["filename"], header.get("source"),
                             header["cells"] if cell_errors is not None else None)
                # The import is over: the refusals hold from here on, for good.
                armed.arm()
                reply = {"ok": True, "defined": describe_api(module, api)}
                answer_buffers: list[bytes] = []
                if answers:
                    reply["answers"] = describe_answers(module, answers, answer_buffers)
                if texts:
                    reply["texts"] = describe_texts(module, texts)
                if cell_errors is not None:
                    reply["cell_errors"] = cell_errors
                channel.send(reply, answer_buffers)
            except BaseException as exc:  # noqa: BLE001 - whatever the student's import raises
                armed.arm()
                status = "memory" if is_memory_error(exc) else (
                    "not_implemented" if isinstance(exc, NotImplementedError) else "error")
                channel.send({"ok": False, "status": status, "error": describe_error(exc),
                              "syntax": _syntax_info(exc)})
        elif op == "call" and module is not None:
            args, kwargs = wire.decode(header["inputs"], buffers)
            args, kwargs = with_chained(header.get("chained"), tuple(args), dict(kwargs),
                                        buffers, module)
            upstream = wire.decode(header["upstream"], buffers)
            func = module.__dict__.get(header["fn"])
            outcome = run_call(func, tuple(args), dict(kwargs), upstream=upstream,
                               want_grad=bool(header.get("want_grad")),
                               forbidden=list(forbidden), api=api, guard=False)
            out_buffers: list[bytes] = []
            node = encode_outcome_safely(outcome, out_buffers, header["fn"])
            channel.send({"ok": True, "outcome": node}, out_buffers)
        elif op == "entry" and module is not None:
            # Grading is over: diagnosis re-runs functions with correct helpers through this.
            try:
                add_entry(module, *made_from)
                channel.send({"ok": True})
            except BaseException:  # noqa: BLE001 - a module the student's code left unusable
                channel.send({"ok": False, "status": "error", "error": {"message": "no entry"}})
        else:
            channel.send({"ok": False, "status": "error", "error": {"message": "bad request"}})


def with_chained(spec: Any, args: tuple, kwargs: dict, buffers: list, module
                 ) -> tuple[tuple, dict]:
    """The call's arguments with its chained inputs (`execute.Chained`) in their places: each
    names one of the student's functions, its inputs and the item of its output to pass."""
    for item in spec or []:
        first_args, first_kwargs = wire.decode(item["inputs"], buffers)
        chain = Chained(str(item["fn"]), module.__dict__.get(str(item["fn"])),
                        tuple(first_args), dict(first_kwargs), steps_from_data(item["pick"]))
        where, place = item["at"]
        if where == 0:
            args = tuple(chain if i == place else a for i, a in enumerate(args))
        else:
            kwargs = {**kwargs, str(place): chain}
    return args, kwargs


def _syntax_info(exc: BaseException) -> dict | None:
    if isinstance(exc, SyntaxError):
        return {"line": exc.lineno, "offset": exc.offset, "text": (exc.text or "").strip()[:200],
                "msg": str(exc.msg)[:200]}
    return None


def arm_for_good(forbidden: tuple[str, ...], plans: list[Plan], audit_hook: bool) -> None:
    """Before any student code: install the refusals of `forbidden` for good (they hold once the
    import is over), then (with `audit_hook`) put the engine out of reach. A refusal that
    cannot be installed ends the worker here, with a status naming why (`evidence.UNARMED`):
    the trusted side grades none of its questions."""
    failed, tokens, late = guard.install(forbidden, plans, _exit, exit_code, stop=STOP_CODES)
    if failed is not None:
        _exit(UNARMED_EXIT + failed)
    if audit_hook:
        protect(tokens, late)


def main_from_fd(fd: int, output_cap: int, forbidden: tuple[str, ...] = (),
                 audit_hook: bool = True, plans: list[dict] | None = None) -> None:
    sock = socket.socket(fileno=fd)
    try:
        arm_for_good(forbidden, [Plan.from_json(p) for p in plans or [{} for _ in forbidden]],
                     audit_hook)
        serve(sock, output_cap, forbidden)
    finally:
        os._exit(0 if sys.exc_info()[0] is None else 70)
