"""What the sandbox reads of the resource limits it enforces. The values and their defaults
are the assignment's (`autograder.model.limits.Limits`, overridden by `[limits]` in
`assignment.toml` and `--limit`); the sandbox imports nothing else of the engine, so it states
here the fields it uses."""
from __future__ import annotations

from typing import Protocol

# Every worker's POSIX message queues (kernel memory outside its address space); not a
# per-assignment limit: no exercise needs them.
MSGQUEUE_BYTES = 64 * 1024


class Limits(Protocol):
    """The limits one worker runs under (see `autograder.model.limits.Limits` for each)."""

    question_seconds: float
    submission_seconds: float
    import_seconds: float
    memory_mb: int
    processes: int
    output_kb: int
    file_mb: int
    open_files: int
    audit_hook: int
