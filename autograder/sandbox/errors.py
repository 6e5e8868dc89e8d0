"""Exceptions shared across modules, kept free of heavy imports (no torch)."""


class SandboxError(Exception):
    """The sandbox could not be started (a machine problem, not a student's)."""
