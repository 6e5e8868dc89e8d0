"""The command line: `autograder check`, `grade`, `build` and the rest (`commands`), and what
every entry point of the engine shares (`arguments`: the `-a` argument, one-line errors)."""
from .commands import build_parser, main

__all__ = ["build_parser", "main"]
