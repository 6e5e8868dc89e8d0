"""The table of known mistakes' outcomes on the public cases, which the student bundle ships so
that a student's own check names mistakes as the instructor's grade does, without the reference
or the catalogue's code (read here; recorded by `autograder snapshot`:
`autograder.authoring.mistake_table`).

It holds, for each check a public case makes (keyed by the digest of the call's public inputs,
`CheckRecord.key`), the outcomes of the catalogue's variants there: single mistakes and the
combinations of few mistakes the search for several causes tries. Each outcome is a function of
public inputs, so the table says nothing about a hidden case, and it holds no code: the
catalogue travels as data (`portable`): names, hints, rules, and which functions each variant
replaces. An outcome it does not hold is `OutcomeUnknown` in the student's process
(`sources.ShippedVariants`): that case gets no name, never a wrong one.

The file (`snapshots/mistake-outcomes.bin`): xz-compressed, a header line, the length of a JSON
header, the header (the catalogue as data, the reference's call graph, per record its variants'
outcome numbers, the outcomes as wire trees) and the arrays' bytes, each distinct array once.
"""
from __future__ import annotations

import json
import lzma
import struct
import threading

from ..model.assignment import Assignment
from ..sandbox.protocol import decode_outcome
from .portable import catalogue_from_data

FORMAT = 1
MAGIC = b"autograder mistake outcomes\n"


# ------------------------------------------------------------------ reading (any side)

class TableError(ValueError):
    """The file is not a table this engine can read."""


class MistakeTable:
    """A recorded table: the catalogue as data, the reference's call graph, and the outcomes."""

    def __init__(self, content: bytes, source: str = "table"):
        try:
            raw = lzma.decompress(content)
        except lzma.LZMAError as e:
            raise TableError(f"not a table of mistake outcomes ({e})") from None
        if not raw.startswith(MAGIC):
            raise TableError("not a table of mistake outcomes")
        start = len(MAGIC) + 8
        (size,) = struct.unpack(">Q", raw[len(MAGIC):start])
        header = json.loads(raw[start:start + size])
        if header.get("format") != FORMAT:
            raise TableError(f"table format {header.get('format')}, this engine reads "
                             f"{FORMAT}: run `autograder snapshot`")
        self.source = source
        self.assignment = header.get("assignment")
        self.catalogue = catalogue_from_data(header["catalogue"])
        self.calls = {f: frozenset(c) for f, c in header["calls"].items()}
        self.records = header["records"]
        self._by_digest = {r["digest"]: r for r in self.records}
        self._outcomes = header["outcomes"]
        body = raw[start + size:]
        self._buffers = [body[o:o + n] for o, n in header["buffers"]]
        self._decoded: dict[int, dict] = {}
        self._lock = threading.Lock()

    def outcome(self, record_key: bytes, variant: str, grads: bool) -> dict | None:
        """The outcome of `variant` on the call `record_key` names, or None if not held."""
        record = self._by_digest.get(record_key.hex())
        entry = record["variants"].get(variant) if record else None
        if entry is None:
            return None
        index = entry[1] if grads else entry[0]
        if index is None:
            return None
        with self._lock:
            hit = self._decoded.get(index)
        if hit is None:
            item = self._outcomes[index]
            hit = decode_outcome(item["node"], [self._buffers[i] for i in item["bufs"]])
            with self._lock:
                self._decoded[index] = hit
        return hit


_tables: dict[str, tuple[float, MistakeTable]] = {}
_tables_lock = threading.Lock()


def load_table(assignment: Assignment) -> MistakeTable | None:
    """The assignment's recorded table, or None if it has none (read once per process)."""
    path = assignment.mistake_table
    try:
        stamp = path.stat().st_mtime
    except OSError:
        return None
    key = str(path.resolve())
    with _tables_lock:
        hit = _tables.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    table = MistakeTable(path.read_bytes(), source=key)
    with _tables_lock:
        _tables[key] = (stamp, table)
    return table
