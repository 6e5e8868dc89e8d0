"""The command line: `autograder check`, `grade`, `build` and the rest. `parser` reads the
arguments and runs a subcommand of `commands`, which runs its recipe (a class run:
`course/class_run.py`) and prints what it returned (`class_output`)."""
from .parser import build_parser, main

__all__ = ["build_parser", "main"]
