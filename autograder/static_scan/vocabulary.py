"""What the scan looks for and what it reports: the library paths and names its rules know
(frames, `gc`, native code, file descriptors, code generation, harmless stores), its size limits,
and `Finding`, one thing found in the source."""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

MAX_VALUES = 64          # abstract values kept per expression (more: "unknown")
MAX_DEPTH = 150          # nesting of one expression's evaluation
MAX_FINDINGS = 200       # per kind, per submission
MAX_TEXT = 80

ENGINE_ROOTS = {"autograder", "__main__"}
# The one kind of tampering the scan proves by itself: a store (assignment, `del`, `setattr`)
# into the engine's own modules, resolved statically. Every other finding is a doubt for review.
ENGINE_STORE = "engine-store"
PROVEN_RULES = {ENGINE_STORE}
DECOMPOSITION_PREFIXES = ("torch._decomp", "torch._refs", "torch._prims")
FRAME_FUNCTIONS = {
    "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
    "sys._getframemodulename", "inspect.currentframe", "inspect.stack", "inspect.trace",
    "inspect.getouterframes", "inspect.getinnerframes", "threading.settrace",
    "threading.setprofile", "traceback.walk_stack", "traceback.walk_tb"}
FRAME_ATTRIBUTES = {"f_back", "f_globals", "f_locals", "f_builtins", "f_trace", "tb_frame",
                    "tb_next", "gi_frame", "cr_frame", "ag_frame", "__globals__",
                    "__subclasses__"}
GC_SCANS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
NATIVE_ROOTS = {"ctypes", "_ctypes", "cffi", "marshal"}
# Functions taking a file descriptor as first argument (both, for dup2).
FD_FUNCTIONS = {"os.write", "os.writev", "os.pwrite", "os.pwritev", "os.sendfile", "os.read",
                "os.readv", "os.pread", "os.dup", "os.dup2", "os.fdopen", "os.close",
                "os.ftruncate", "os.set_inheritable", "os.set_blocking", "fcntl.fcntl",
                "fcntl.ioctl", "socket.fromfd", "io.FileIO", "io.open", "builtins.open"}
# Calls that give a descriptor the submission opened itself.
FD_SOURCES = {"os.open", "os.pipe", "os.pipe2", "os.memfd_create", "tempfile.mkstemp",
              "pty.openpty", "os.openpty", "os.eventfd"}
FD_PATH = re.compile(r"/proc/[^/]+/fd|/dev/fd")
CODEGEN = {"builtins.exec", "builtins.eval", "builtins.compile"}
# Roots of the calls whose arguments the channel and patching rules look at.
CALL_RULE_ROOTS = {"builtins", "os", "io", "socket", "fcntl", "pathlib", "glob", "shutil"}
DYNAMIC_IMPORTS = {"builtins.__import__", "importlib.import_module", "importlib.__import__"}
# Modules whose attributes looked up by a computed name may reach the engine.
SENSITIVE_ROOTS = {"sys", "gc", "inspect", "builtins", "os", "socket", "importlib", "ctypes",
                   "threading", "traceback", "types"}
# Library attributes a student may set without touching anything the grader relies on.
HARMLESS_STORES = ("sys.stdout", "sys.stderr", "sys.stdin", "sys.path", "sys.argv",
                   "sys.dont_write_bytecode", "torch.backends.", "pandas.options.",
                   "matplotlib.rcParams")

INTEGRITY_MESSAGE = "integrity: this submission modifies the grader; flagged for review"
# Doubts of the scan (what it cannot resolve, or code that could touch the grader but is not
# proven to): flagged for the instructor, no points taken.
REVIEW_MESSAGE = ("integrity: the source has code the grader could not check; flagged for "
                  "review, no points taken for it")
# A source over the scan's budget: not checked, so flagged (a cheater could pad a file), but
# its points are kept: the instructor decides.
CUT_SHORT_MESSAGE = ("integrity: this file is too large to check for changes to the grader; "
                     "flagged for review")


@dataclass(frozen=True)
class Finding:
    """One thing found in the source: where, what the code says, and why it matters."""

    kind: str          # "forbidden" (a library shortcut), "tamper" (proven) or "review"
    rule: str          # short id: "library", "method", "computed-name", "engine", "frames"...
    line: int
    code: str          # the expression as written (clipped)
    target: str = ""   # the library path it reaches, for "forbidden" findings
    why: str = ""      # words for the student and the instructor

    def to_json(self) -> dict:
        return {"kind": self.kind, "rule": self.rule, "line": self.line, "code": self.code,
                "target": self.target, "why": self.why}

    def describe(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}`{self.code}` {self.why}".rstrip()


def root_of(path: str) -> str:
    return path.split(".", 1)[0]


def line_of(node: ast.AST) -> int:
    return int(getattr(node, "lineno", 0) or 0)


# Expression nodes rendered for a finding: each gives at least one character, so the first
# MAX_TEXT characters come from the first MAX_TEXT + 20 of them in source order.
TEXT_NODES = MAX_TEXT + 20


def _clipped(node: ast.AST, room: list[int]) -> ast.AST:
    """A copy of `node`'s first `room[0]` nodes (preorder, which is source order for almost
    every expression); the rest become `…`. Rendering a whole nested call at every level of
    it would cost the square of its size."""
    if not node._fields:            # contexts and operators: shared, nothing to render
        return node
    if isinstance(node, ast.expr):
        room[0] -= 1
        if room[0] < 0:
            return ast.Name(id="…", ctx=ast.Load())
    new = copy.copy(node)
    for name, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            setattr(new, name, _clipped(value, room))
        elif isinstance(value, list):
            kept = []
            for item in value:
                if isinstance(item, ast.AST) and room[0] <= 0:
                    break
                kept.append(_clipped(item, room) if isinstance(item, ast.AST) else item)
            setattr(new, name, kept)
    return new


def code_text(node: ast.AST) -> str:
    try:
        text = ast.unparse(_clipped(node, [TEXT_NODES]))
    except Exception:  # noqa: BLE001 - unparse of an odd tree: show nothing rather than fail
        text = "?"
    text = " ".join(text.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"
