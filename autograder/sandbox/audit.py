"""The worker's audit hook (PEP 578): escapes into the interpreter refused, and reported.

Installed in each worker before the student's source runs; Python offers no way to remove an
audit hook, and its state lives only in this closure. CPython raises an audit event for each
way to reach objects the student was not given: frames (`sys._getframe`, `sys._current_frames`,
a traceback's `tb_frame`, a generator's or coroutine's frame, `f_code`), the collector's object
lists, `ctypes`, building code and functions, `marshal`, pickle's `find_class`, trace and
profile hooks, the process's own `/proc` files, imports, and raising the resource limit that
makes the refusals hold (`armed.py`; lowering it to 0 only makes them hold). The hook refuses
those by ending the worker with an exit status naming the escape (`evidence.py`): the refusal
is complete (no code of the student's runs after it) and the trusted side reads it from outside
the worker.

Honest code must never trip it, so a few readers are allowed by who asks, identified by their
code objects (which the student can neither forge nor rebuild: building code is refused):

* the standard library's readers that take only a name or text from a frame (`namedtuple`,
  `typing`'s and `enum`'s module lookups, `logging`'s caller lookup, `traceback`'s extraction,
  which returns text), so `traceback.print_exc()` or a `NamedTuple` keep working;
  `inspect.stack()` or `sys._getframe()` itself, which hand frames to the caller, are refused;
* the import system's `marshal.loads` of cached bytecode;
* the engine's own code (`trusted`): the guard's code swaps (`guard.py`);
* the refusals' own walk of the stack (`observe.py`): each frame read is let through once by a
  token the walk and this hook alone hold.

What it does not hold against: native code. A compiled extension already loaded by a library,
or a bug in one, runs below Python's audit points; there only the sandbox level holds (its own
user, namespaces, rlimits, the file system view; see `levels.py`).
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Iterable

from .evidence import ESCAPE_EXIT, ESCAPES

FRAMES, GC, CTYPES, CODE, MARSHAL, PICKLE, TRACE, PROC, HOOK, ENGINE, SET_CODE, CLASSES, \
    PROCESS, ARMING = range(len(ESCAPES))

# Attributes CPython audits as "object.__getattr__" that hand out a frame or a code object.
_FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"}
_ALWAYS = {
    "sys._current_frames": FRAMES, "gc.get_objects": GC, "gc.get_referrers": GC,
    "gc.get_referents": GC, "sys.settrace": TRACE, "sys.setprofile": TRACE,
    "sys.addaudithook": HOOK,
}
# A second process would have none of the worker's refusals (and, forked, all of torch's
# kernels): every way Python starts one is refused. `_posixsubprocess.fork_exec` raises no
# event of its own; the worker replaces it (`worker.protect`), and the seccomp filter holds
# below Python (`seccomp.py`).
DECLINED = -1       # refused with an error, not evidence
_PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.system",
                   "os.spawn", "subprocess.Popen", "pty.spawn", "os.startfile"}
_WATCHED = set(_ALWAYS) | _PROCESS_EVENTS | {"sys._getframe", "object.__getattr__", "object.__setattr__",
                           "code.__new__", "function.__new__", "marshal.loads", "marshal.load",
                           "open", "import", "compile", "pickle.find_class",
                           "resource.setrlimit", "resource.prlimit"}
# What pickle may look up by name: the functions and classes that rebuild tensors, arrays and
# containers (a pickle round trip or `copy.deepcopy` of the parameters), nothing that runs
# code of the pickle's choosing.
PICKLE_DATA = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "complex"), ("builtins", "slice"), ("builtins", "range"),
    ("builtins", "bytearray"), ("copyreg", "_reconstructor"), ("builtins", "object"),
    ("torch._utils", "_rebuild_tensor"), ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_tensor_v3"), ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"), ("torch._utils", "_rebuild_from_type_v2"),
    ("torch._tensor", "_rebuild_from_type_v2"), ("torch.storage", "_load_from_bytes"),
    ("torch.nn.parameter", "Parameter"), ("torch", "Size"), ("torch", "device"),
    ("torch", "Tensor"),
    *(("torch", d) for d in ("float16", "bfloat16", "float32", "float64", "int8", "int16",
                             "int32", "int64", "uint8", "bool", "complex64", "complex128")),
    *(("torch", f"{k}Storage") for k in ("Float", "Double", "Half", "BFloat16", "Long", "Int",
                                         "Short", "Char", "Byte", "Bool", "ComplexFloat",
                                         "ComplexDouble", "Untyped")),
    *((m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray")
      for n in ("_reconstruct", "scalar")),
    ("numpy", "ndarray"), ("numpy", "dtype"),
}


def _code_of(obj) -> object | None:
    code = getattr(obj, "__code__", None)
    return code if code is not None else None


def _standard_readers() -> tuple[set, set, set]:
    """Code objects of the standard library allowed to read frames: (readers that return only
    names or text, frame generators allowed only when `traceback`'s extraction consumes them,
    that extraction)."""
    import collections
    import enum
    import logging
    import traceback
    import typing

    readers = {_code_of(collections.namedtuple), _code_of(getattr(typing, "_caller", None)),
               _code_of(traceback.extract_stack), _code_of(traceback.format_stack),
               _code_of(traceback.print_stack), _code_of(logging.Logger.findCaller),
               _code_of(getattr(logging, "_is_internal_frame", None))}
    create = getattr(enum.EnumType, "_create_", None) if hasattr(enum, "EnumType") else None
    readers.add(_code_of(getattr(create, "__func__", create)))
    generators = {_code_of(traceback.walk_tb),
                  _code_of(getattr(traceback, "_walk_tb_with_full_positions", None))}
    extract = getattr(traceback.StackSummary, "_extract_from_extended_frame_gen", None)
    consumers = {_code_of(getattr(extract, "__func__", extract))}
    return ({c for c in readers if c is not None}, {c for c in generators if c is not None},
            {c for c in consumers if c is not None})


def _process_starters() -> tuple[set[str], tuple[str, ...]]:
    """The files (and folders) of the modules whose job is starting a process on their caller's
    behalf: the caller of a refused process start is the first frame outside them."""
    import concurrent.futures
    import multiprocessing
    import subprocess

    files = {os.__file__, subprocess.__file__}
    for name in ("pty", "asyncio.subprocess", "asyncio.base_subprocess", "asyncio.unix_events"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            files.add(module.__file__)
    folders = (os.path.dirname(multiprocessing.__file__) + "/",
               os.path.join(os.path.dirname(concurrent.futures.__file__), "process.py"))
    return files, folders


def _library_dirs() -> tuple[str, ...]:
    """Where the Python installation's and the installed packages' files are."""
    import sysconfig

    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    return tuple(sorted(d.rstrip("/") + "/" for d in dirs if d))


def _is_library(filename: str, library: tuple[str, ...]) -> bool:
    return filename.startswith(library) or filename.startswith("<frozen ")


def _under_proc(path) -> bool:
    """Whether `path` (after links) is /proc itself or a process's folder in it."""
    if isinstance(path, int):
        return False
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError, OSError):
        return True
    parts = real.split("/")
    if real == "/proc" or (len(parts) > 2 and parts[1] == "proc" and (
            parts[2] in ("self", "thread-self") or parts[2].isdigit())):
        return True
    return False


def install(exit_worker, trusted: Iterable[object] = (),
            engine_classes: Iterable[type] = (), tokens: dict | None = None,
            on_import=None) -> None:
    """Install the hook. `exit_worker(status)` ends the process (`os._exit`, taken here so that
    nothing the student rebinds later matters); `trusted`: the engine's own code objects that
    may swap a function's code; `engine_classes`: classes whose attributes the student's code
    may not change; `tokens`: the frame reads the refusals' own stack walk makes
    (`observe.py`), each let through once: {thread: the frame about to be read, or
    `sys._getframe` for the call that starts the walk}; `on_import(name)`: called when a module
    is about to be imported (after the import passed this hook's checks), outside this hook's
    own guard, so that whatever it imports meets every check (`guard._late`)."""
    readers, generators, consumers = _standard_readers()
    loaders = set()
    for name in ("_frozen_importlib_external", "zipimport"):
        module = sys.modules.get(name)
        for attr in ("_compile_bytecode", "_unmarshal_code"):
            code = _code_of(getattr(module, attr, None))
            if code is not None:
                loaders.add(code)
    trusted_codes = set(trusted)
    library = _library_dirs()
    import inspect
    handouts = {inspect.__file__}
    importers = {c for c in loaders} | {
        _code_of(getattr(sys.modules.get("_frozen_importlib_external"), "source_to_code", None))}
    classes = {id(c) for c in engine_classes}
    import importlib

    # Importing by name on a caller's behalf: the module counts as its first caller outside.
    importers_by_name = handouts | {importlib.__file__}
    logging_frame = find_caller = None
    logging_module = sys.modules.get("logging")
    if logging_module is not None:
        logging_frame = _code_of(getattr(logging_module, "currentframe", None))
        find_caller = _code_of(logging_module.Logger.findCaller)
    starter_files, starter_folders = _process_starters()
    get_frame, get_ident, exit_status = sys._getframe, threading.get_ident, ESCAPE_EXIT
    inside: set[int] = set()   # threads running this hook: its own frame reads pass
    walks = tokens if tokens is not None else {}
    import resource

    arming = resource.RLIMIT_RTTIME

    def chain(frame, depth: int) -> list:
        """Code objects of `frame` (the operation's caller) and up to `depth` frames above."""
        codes = []
        while frame is not None and len(codes) <= depth:
            codes.append(frame.f_code)
            frame = frame.f_back
        return codes

    def frames_allowed(frame) -> bool:
        codes = chain(frame, 3)
        if not codes:
            return False
        if codes[0] in readers or codes[0] in consumers:
            return True
        if codes[0] in generators:
            return any(c in consumers for c in codes[1:])
        if logging_frame is not None and codes[0] is logging_frame:
            return len(codes) > 1 and codes[1] is find_caller
        # Other library code reading frames (typing_extensions, sympy's lazy import under
        # torch...) keeps what it reads. The modules whose very job is handing frames to their
        # caller (`inspect`) count as their first caller outside them: a library, or the student.
        rest = chain(frame, 8)
        while rest and rest[0].co_filename in handouts:
            rest = rest[1:]
        return bool(rest) and _is_library(rest[0].co_filename, library)

    def caller_in(frame, codes: set) -> bool:
        return frame is not None and frame.f_code in codes

    def library_caller(frame, skip: set) -> bool:
        """Whether the first caller outside the import system (and outside `skip`, modules
        that act on a caller's behalf) is library code, not the student's."""
        while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                     or frame.f_code.co_filename in skip):
            frame = frame.f_back
        return frame is not None and _is_library(frame.f_code.co_filename, library)

    def started_by_student(frame) -> bool:
        """Whether the first caller outside the process-starting modules is the student's code
        (hard evidence) rather than a library asking on an honest caller's behalf
        (`platform.processor()` runs `uname -p`): that one only gets an error."""
        while frame is not None and (frame.f_code.co_filename in starter_files or
                                     frame.f_code.co_filename.startswith(starter_folders)):
            frame = frame.f_back
        return frame is None or not _is_library(frame.f_code.co_filename, library)

    def lowers_arming_only(event: str, args: tuple) -> bool:
        """A change of resource limits that leaves the arming limit alone or lowers it to 0
        (which only makes the refusals hold)."""
        rest = args[1:] if event == "resource.prlimit" else args
        if not rest or rest[0] != arming:
            return True
        limits = rest[1] if len(rest) > 1 else None
        if limits is None:
            return True          # prlimit reading the limits
        try:
            return tuple(limits)[1] == 0
        except (TypeError, IndexError):
            return False

    def refused(event: str, args: tuple, frame) -> int | None:
        if event in _ALWAYS:
            return _ALWAYS[event]
        if event in ("resource.setrlimit", "resource.prlimit"):
            return None if lowers_arming_only(event, args) else ARMING
        if event in _PROCESS_EVENTS:
            return PROCESS if started_by_student(frame) else DECLINED
        if event == "sys._getframe":
            return None if frames_allowed(frame) else FRAMES
        if event == "object.__getattr__":
            if len(args) > 1 and args[1] in _FRAME_ATTRIBUTES:
                return None if frames_allowed(frame) else FRAMES
            return None
        if event == "object.__setattr__":
            # The worker swapped its library functions' code before this hook existed: no
            # code is swapped after it, by anyone.
            if len(args) > 1 and args[1] == "__code__":
                return SET_CODE
            if classes and isinstance(args[0], type) and id(args[0]) in classes:
                return CLASSES
            return None
        if event in ("code.__new__", "function.__new__"):
            # torch.compile's bytecode rewriting builds code: library code may, the student's
            # may not (a function built that way changes no refusal, which code swaps cannot
            # reach any more; this only keeps the student's own code as written).
            return None if caller_in(frame, trusted_codes) or library_caller(frame, set()) \
                else CODE
        if event == "pickle.find_class":
            return None if tuple(map(str, args[:2])) in PICKLE_DATA else PICKLE
        if event == "compile":
            # A library's file name on the student's code would pass it for library code.
            name = args[1] if len(args) > 1 else None
            if isinstance(name, (str, bytes)) and _is_library(os.fsdecode(name), library):
                return None if caller_in(frame, importers) else CODE
            return None
        if event in ("marshal.loads", "marshal.load"):
            return None if caller_in(frame, loaders) else MARSHAL
        if event == "open":
            return PROC if args and _under_proc(args[0]) else None
        if event == "import":
            top = str(args[0]).split(".")[0] if args else ""
            if top in ("ctypes", "_ctypes"):
                # torch.compile's modules import ctypes (for Windows' DLLs); the student's code
                # may not, nor through a module that imports by name on its behalf. Calling
                # into ctypes stays refused to everyone (`ctypes.*` events).
                return None if library_caller(frame, importers_by_name) else CTYPES
            if top == "_posixsubprocess":
                return PROCESS       # a fresh copy would bring back the replaced fork_exec
            return ENGINE if top == "autograder" else None
        return None

    def hook(event: str, args: tuple) -> None:
        if event not in _WATCHED and not event.startswith("ctypes."):
            return
        me = get_ident()
        if me in inside:
            return
        token = walks.get(me)
        if token is not None and ((event == "sys._getframe" and token is get_frame) or (
                event == "object.__getattr__" and args[0] is token and args[1] == "f_code")):
            walks.pop(me, None)      # the refusals' own walk: each token passes once
            return
        inside.add(me)
        try:
            # The Python frame that caused the event (0 is this hook).
            kind = CTYPES if event.startswith("ctypes.") else refused(event, args, get_frame(1))
        finally:
            inside.discard(me)
        if kind == DECLINED:
            raise PermissionError("the grader's worker starts no other process")
        if kind is not None:
            exit_worker(exit_status + kind)
        if on_import is not None and event == "import" and args:
            on_import(str(args[0]))

    sys.addaudithook(hook)
