"""Exceptions shared across modules, kept free of heavy imports (no torch)."""


class RunStopped(Exception):
    """The grading of a submission cannot go on at all: never one case's result, whatever code
    the exception passes through (a question file's included)."""


class SandboxError(RunStopped):
    """The sandbox could not be started (a machine problem, not a student's)."""
