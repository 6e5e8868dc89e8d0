"""Outcomes as data: the encoding shared by the worker (sender) and the trusted side (receiver).

`encode_outcome` runs where student code ran; `decode_outcome` runs in the trusted process and
validates everything it reads, so nothing the student controls reaches the verdict except plain
arrays, short strings and lists of names.
"""
from __future__ import annotations

from typing import Any

from .wire import WireError, decode, encode

STATUSES = {"ok", "error", "not_implemented", "memory"}
MAX_NAMES = 32


def encode_outcome(outcome: dict, buffers: list[bytes]) -> dict:
    grads = outcome.get("grads")
    return {
        "status": outcome["status"],
        "output": encode(outcome.get("output"), buffers),
        "grads": None if grads is None else {k: encode(v, buffers) for k, v in grads.items()},
        "grad_error": outcome.get("grad_error"),
        "mutated": list(outcome.get("mutated", [])),
        "forbidden": list(outcome.get("forbidden", [])),
        "called": list(outcome.get("called", [])),
        "error": outcome.get("error"),
    }


def _names(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v)[:120] for v in value[:MAX_NAMES]]


def _short(value: Any, limit: int = 400) -> str | None:
    if value is None:
        return None
    s = str(value)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def decode_outcome(node: Any, buffers: list[bytes]) -> dict:
    """Validate and decode an outcome; raises WireError if it is not well formed."""
    if not isinstance(node, dict) or node.get("status") not in STATUSES:
        raise WireError("malformed outcome")
    grads_node = node.get("grads")
    grads = None
    if isinstance(grads_node, dict):
        grads = {str(k)[:120]: decode(v, buffers) for k, v in list(grads_node.items())[:64]}
    error = node.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise WireError("malformed error")
        line = error.get("line")
        error = {
            "type": _short(error.get("type"), 80), "message": _short(error.get("message")),
            "file": _short(error.get("file"), 120),
            "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
            "code": _short(error.get("code"), 200), "function": _short(error.get("function"), 80),
        }
    return {
        "status": node["status"],
        "output": decode(node.get("output", {"t": "none"}), buffers),
        "grads": grads,
        "grad_error": _short(node.get("grad_error"), 300),
        "mutated": _names(node.get("mutated")),
        "forbidden": _names(node.get("forbidden")),
        "called": _names(node.get("called")),
        "error": error,
    }


def roundtrip_outcome(outcome: dict) -> dict:
    """Pass an in-process outcome through the same encoding, so both paths judge plain data."""
    buffers: list[bytes] = []
    node = encode_outcome(outcome, buffers)
    return decode_outcome(node, buffers)
