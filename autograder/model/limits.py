"""Resource limits for graded student code: the defaults live here, in one place.

An assignment may override any of them in its `assignment.toml` (`[limits]`), and the CLI may
override them again (`--limit name=value`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

@dataclass(frozen=True)
class Limits:
    question_seconds: float = 10.0      # wall clock per question, across all its cases
    submission_seconds: float = 60.0    # wall clock for the whole submission
    import_seconds: float = 10.0        # wall clock to import the student's file
    # A worker's memory above the fork server's: its address space (torch needs ~1 GiB to
    # exist); where workers have namespaces, half of it again for files and for shared memory.
    memory_mb: int = 3072
    processes: int = 64                 # tasks (processes and threads) of the sandbox user
    output_kb: int = 256                # what the student's prints may fill; the rest is dropped
    file_mb: int = 16                   # largest file the student's code may write
    open_files: int = 256
    # 1: the worker's audit hook refuses escapes (frames, gc scans, ctypes, ...) and the engine
    # leaves sys.modules before student code runs. 0 only measures what the sandbox level alone
    # holds against native code (its own tests); never for grades that count.
    audit_hook: int = 1

    @classmethod
    def from_config(cls, config: dict) -> "Limits":
        return cls().override(config)

    def override(self, values: dict) -> "Limits":
        known = {f.name: f.type for f in fields(self)}
        changes = {}
        for key, value in values.items():
            if key not in known:
                raise ValueError(f"unknown limit {key!r}; known: {', '.join(sorted(known))}")
            changes[key] = float(value) if known[key] in (float, "float") else int(float(value))
        return replace(self, **changes)


def parse_cli_limits(items: list[str]) -> dict:
    values = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--limit takes name=value, got {item!r}")
        values[key.strip().replace("-", "_")] = value.strip()
    return values
