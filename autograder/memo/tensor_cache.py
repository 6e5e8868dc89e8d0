"""Values derived from a tensor, remembered while the tensor is unchanged.

The trusted side handles the same tensors many times over (every submission gets the same
inputs; each candidate mistake's output is compared with the student's), so digests, wire
encodings and float64 copies are computed once per tensor. An entry is valid for the same object
at the same version counter (an in-place change moves it); the cache holds the tensor itself, so
its id cannot be reused while the entry lives. Least recently used entries go first.
"""
from __future__ import annotations

import threading
from typing import Any

import torch


class TensorCache:
    def __init__(self, max_items: int = 4096, max_bytes: int | None = None,
                 max_item_bytes: int | None = None):
        self.max_items, self.max_bytes, self.max_item_bytes = max_items, max_bytes, max_item_bytes
        self.nbytes = 0
        self._items: dict[int, tuple[torch.Tensor, int, Any, int]] = {}
        self._lock = threading.Lock()

    def get(self, t: torch.Tensor) -> Any:
        """The value remembered for `t` as it is now, or None."""
        with self._lock:
            hit = self._items.pop(id(t), None)
            if hit is None:
                return None
            if hit[0] is t and hit[1] == t._version:
                self._items[id(t)] = hit      # most recently used last
                return hit[2]
            self.nbytes -= hit[3]
            return None

    def put(self, t: torch.Tensor, value: Any, nbytes: int = 0) -> None:
        """Remember `value` for `t`; `nbytes` is what keeping it costs (tensor and value)."""
        if self.max_item_bytes is not None and nbytes > self.max_item_bytes:
            return     # computed again next time rather than kept
        with self._lock:
            old = self._items.pop(id(t), None)
            if old is not None:
                self.nbytes -= old[3]
            while self._items and (len(self._items) >= self.max_items or (
                    self.max_bytes is not None and self.nbytes + nbytes > self.max_bytes)):
                self.nbytes -= self._items.pop(next(iter(self._items)))[3]
            self._items[id(t)] = (t, t._version, value, nbytes)
            self.nbytes += nbytes

    def holds(self, t: torch.Tensor) -> bool:
        with self._lock:
            return any(entry[0] is t for entry in self._items.values())


class TensorMemo(TensorCache):
    """Wire encodings of tensors (tree node, bytes), remembered while unchanged: the grader sends
    every submission the same input tensors. A large one is encoded again each time, not kept."""

    def __init__(self, size: int = 2048, max_bytes: int = 4 * 2**20):
        super().__init__(max_items=size, max_item_bytes=max_bytes)
