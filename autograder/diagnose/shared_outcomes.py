"""Variant outcomes shared between the grading processes of one class run.

Each grading process keeps the outcomes of the known mistakes' variants it computed
(`variants.VariantRunner`), since every submission gets the same inputs; with two processes,
about a third of the class's outcomes were computed by both (4,000 of 12,000 for the
benchmark's class of 120). So after each submission a process writes the outcomes it computed
for it to a folder of the run's own, one file per submission, and before the next it takes in
the files the others wrote: an outcome one of them computed is decoded, not computed again.

The folder is made by the class run's main process (private to the grader's user, removed at
the end, or by the next run if this one was killed: `batch.outcomes_folder`) and only grading
processes read and write it: a worker sees a file system of its own at the `namespaces` and
`user` levels. What is read is validated as a worker's reply is
(`protocol.decode_outcome`); a file that does not read is skipped (that outcome is computed).
An outcome is the same bits whichever process computed it (the same code on the same inputs,
one thread), so sharing changes no name and no hint.
"""
from __future__ import annotations

import json
import os
import struct
import threading
import time
from pathlib import Path
from typing import Any

from ..sandbox.protocol import decode_outcome

MAGIC = b"autograder shared outcomes 1\n"
SUFFIX = ".outcomes"
RECENT = 0.05

Key = tuple[str, str, int, bytes, bool]     # source, mistake id, alternative, record key, grads


class SharedOutcomes:
    """One grading process's view of the run's folder of outcomes (`folder`); `tag` names its
    files apart from the other processes'."""

    def __init__(self, folder: str | Path, tag: str):
        self.folder = Path(folder)
        self.tag = tag
        self._lock = threading.Lock()
        self._fresh: list[tuple[Key, dict, list[bytes]]] = []   # computed here, not written
        self._held: dict[Key, tuple[dict, list[bytes]]] = {}    # written by others, not decoded
        self._read: set[str] = set()
        self._reading = threading.Lock()
        self._scanned = 0.0
        self._written = 0
        self.computed = 0     # outcomes this process computed and wrote (or will write)
        self.reused = 0       # outcomes another process computed, read here

    def add(self, key: Key, node: dict, buffers: list[bytes]) -> None:
        """An outcome this process computed (as encoded), for the next `publish`."""
        with self._lock:
            self._fresh.append((key, node, list(buffers)))
            self.computed += 1

    def get(self, key: Key) -> dict | None:
        """The outcome another process computed for `key`, decoded, or None. Not held yet: the
        folder is read again if it was not in the last `RECENT` seconds (another process may
        have just written it: the two grade alike submissions side by side)."""
        with self._lock:
            held = self._held.pop(key, None)
        if held is None and time.monotonic() - self._scanned > RECENT:
            self.take_in()
            with self._lock:
                held = self._held.pop(key, None)
        if held is None:
            return None
        try:
            outcome = decode_outcome(*held)
        except Exception:  # noqa: BLE001 - a damaged entry: computed here instead
            return None
        self.reused += 1
        return outcome

    def publish(self) -> None:
        """Write what was computed since the last call, as one file (renamed into place, so a
        reader never sees half of one)."""
        with self._lock:
            fresh, self._fresh = self._fresh, []
        if not fresh:
            return
        entries, body, offset = [], [], 0
        for (source, mistake, index, record, grads), node, buffers in fresh:
            spans = []
            for data in buffers:
                spans.append([offset, len(data)])
                body.append(data)
                offset += len(data)
            entries.append([source, mistake, index, record.hex(), grads, node, spans])
        head = json.dumps(entries, separators=(",", ":")).encode()
        self._written += 1
        path = self.folder / f"{self.tag}-{self._written}{SUFFIX}"
        tmp = path.with_suffix(".tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(MAGIC + struct.pack(">Q", len(head)) + head + b"".join(body))
            os.replace(tmp, path)
        except OSError:
            pass    # the others compute these themselves

    def take_in(self) -> int:
        """Read the files the other processes wrote since the last call; how many entries."""
        with self._reading:
            self._scanned = time.monotonic()
            return self._take_in()

    def _take_in(self) -> int:
        try:
            names = [e.name for e in os.scandir(self.folder)
                     if e.name.endswith(SUFFIX) and not e.name.startswith(f"{self.tag}-")
                     and e.name not in self._read]
        except OSError:
            return 0
        found = 0
        for name in names:
            self._read.add(name)
            for key, node, buffers in _entries(self.folder / name):
                with self._lock:
                    self._held.setdefault(key, (node, buffers))
                found += 1
        return found


def _entries(path: Path) -> list[tuple[Key, Any, list[bytes]]]:
    try:
        raw = path.read_bytes()
        if not raw.startswith(MAGIC):
            return []
        start = len(MAGIC) + 8
        (size,) = struct.unpack(">Q", raw[len(MAGIC):start])
        entries = json.loads(raw[start:start + size])
        body = memoryview(raw)[start + size:]
        out = []
        for source, mistake, index, record, grads, node, spans in entries:
            buffers = [bytes(body[o:o + n]) for o, n in spans]
            out.append(((str(source), str(mistake), int(index), bytes.fromhex(record),
                         bool(grads)), node, buffers))
        return out
    except (OSError, ValueError, TypeError, struct.error):
        return []


_shared: SharedOutcomes | None = None


def share_outcomes(folder: str | Path | None, tag: str = "") -> None:
    """Have this process's variants share their outcomes through `folder` (None: stop)."""
    global _shared
    _shared = SharedOutcomes(folder, tag or str(os.getpid())) if folder else None


def shared() -> SharedOutcomes | None:
    return _shared
