"""An autograder for transformer exercises: otter-format questions, sandboxed student code."""

__version__ = "0.1.0"
