"""What every command line of the engine shares: the `-a` argument, an argument parser whose
errors are one line, and the wrapper that turns a user's mistake into one line on stderr
instead of a traceback (`autograder ...` and every `python -m autograder.X` entry point)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from ..model.assignment import ASSIGNMENT_ARGUMENT_HELP, AssignmentError
from ..model.safetext import shown_path, visible

# Mistakes of the person running a command (an assignment not found or malformed, a file
# missing or unreadable, a malformed value), not of the engine.
USER_ERRORS = (AssignmentError, OSError, ValueError)
USAGE_ERROR = 2


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line that points at `--help`."""

    def error(self, message: str):
        print(f"{self.prog}: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(USAGE_ERROR)


def add_assignment_argument(parser: argparse.ArgumentParser, *, required: bool = True,
                            default: str | None = None, positional: bool = False) -> None:
    """The `-a/--assignment` argument (or, with `positional`, an `assignment` operand), with
    the same help everywhere: a path or a name (`assignment.find_assignment_root`)."""
    names = ["assignment"] if positional else ["-a", "--assignment"]
    extra = {} if positional else {"required": required and default is None, "default": default}
    suffix = f" (default: {default})" if default else ""
    parser.add_argument(*names, metavar="ASSIGNMENT", help=ASSIGNMENT_ARGUMENT_HELP + suffix,
                        **extra)


def user_error_line(error: BaseException) -> str:
    """The one line that says what went wrong (a missing file by its path)."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{shown_path(error.filename)}: {error.strerror}"
    return visible(error)


# The engine's third-party imports and the requirement that brings each (requirements.txt).
_REQUIREMENT_OF = {"torch": "torch", "numpy": "numpy", "scipy": "scipy", "otter": "otter-grader",
                   "nbformat": "nbformat", "tqdm": "tqdm", "jinja2": "jinja2",
                   "matplotlib": "matplotlib", "yaml": "PyYAML", "pandas": "pandas"}


def missing_requirement_message(error: ModuleNotFoundError) -> str | None:
    """One sentence for a requirement this Python lacks (a new Python, a fresh venv), or None
    when the missing module is not one of the engine's requirements."""
    top = (error.name or "").split(".", 1)[0]
    if top not in _REQUIREMENT_OF:
        return None
    return (f"{_REQUIREMENT_OF[top]} is not installed in this Python "
            f"({sys.version.split()[0]}, {sys.executable}): run `{Path(sys.executable).name} -m "
            "pip install -r requirements.txt` in the bundle's folder, then try again")


def run_entry_point(main: Callable[[list[str] | None], int], prog: str,
                    argv: list[str] | None = None) -> int:
    """`main(argv)`'s exit status; a user's mistake is one line on stderr and status 2."""
    try:
        return main(argv)
    except ModuleNotFoundError as e:
        message = missing_requirement_message(e)
        if message is None:
            raise
        print(f"{prog}: {message}", file=sys.stderr)
        return USAGE_ERROR
    except USER_ERRORS as e:
        print(f"{prog}: {user_error_line(e)}", file=sys.stderr)
        return USAGE_ERROR
