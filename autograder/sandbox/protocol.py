"""Outcomes as data: the encoding shared by the worker (sender) and the trusted side (receiver).

`encode_outcome` runs where student code ran; `decode_outcome` runs in the trusted process and
validates everything it reads, so nothing the student controls reaches the verdict except plain
arrays, short strings and lists of names.
"""
from __future__ import annotations

from typing import Any

import torch

from .wire import Budget, Opaque, WireError, decode, encode

STATUSES = {"ok", "error", "not_implemented", "memory"}
# How a forbidden routine was refused (`evidence.refusal_message`).
REFUSAL_KINDS = {"routine", "library", "compiler"}
MAX_NAMES = 32


# Fields an outcome has only when they say something (so that the encoding of an outcome
# without them, recorded in the shipped tables, stays as it was).
OPTIONAL = ("changes", "unconnected", "chained")


def encode_outcome(outcome: dict, buffers: list[bytes]) -> dict:
    grads = outcome.get("grads")
    node = {
        "status": outcome["status"],
        "output": encode(outcome.get("output"), buffers),
        "grads": None if grads is None else {k: encode(v, buffers) for k, v in grads.items()},
        "grad_error": outcome.get("grad_error"),
        "mutated": list(outcome.get("mutated", [])),
        "forbidden": list(outcome.get("forbidden", [])),
        "refused_how": list(outcome.get("refused_how", [])),
        "called": list(outcome.get("called", [])),
        "error": outcome.get("error"),
        "unchecked": outcome.get("unchecked"),
    }
    for key in OPTIONAL:
        if outcome.get(key):
            node[key] = outcome[key]
    return node


def encode_outcome_safely(outcome: dict, buffers: list[bytes], function: str) -> dict:
    """`encode_outcome`, or, when the student's returned value resists encoding (an attribute
    that raises, a container that changes while read), an error outcome that says so."""
    try:
        return encode_outcome(outcome, buffers)
    except BaseException as exc:  # noqa: BLE001 - a returned object that resists encoding
        if isinstance(exc, KeyboardInterrupt):
            raise
        buffers.clear()
        return encode_outcome({
            "status": "error", "error": {
                "type": type(exc).__name__[:80], "function": function,
                "message": "the value your function returned could not be sent to the "
                           "grader; return plain tensors"}}, buffers)


def _names(value: Any, what: str) -> list[str]:
    """A list of short names; anything but a list of strings is malformed."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WireError(f"{what} is not a list of names")
    return [v[:120] for v in value[:MAX_NAMES]]


def _kinds(value: Any) -> list[str]:
    kinds = _names(value, "refused_how")
    if not set(kinds) <= REFUSAL_KINDS:
        raise WireError("an unknown kind of refusal")
    return kinds


def _short(value: Any, limit: int = 400, what: str = "a text field") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise WireError(f"{what} is not a string")
    return value if len(value) <= limit else value[: limit - 1] + "…"


MAX_LINE = 10**7


def decode_error(error: Any) -> dict | None:
    """The student's view of an exception (see `execute.describe_error`), validated."""
    if error is None:
        return None
    if not isinstance(error, dict):
        raise WireError("malformed error")
    line = error.get("line")
    if line is not None and not (isinstance(line, int) and not isinstance(line, bool)
                                 and 0 <= line <= MAX_LINE):
        raise WireError("malformed error line")
    return {
        "type": _short(error.get("type"), 80, "an error type"),
        "message": _short(error.get("message"), what="an error message"),
        "file": _short(error.get("file"), 120, "an error file"),
        "line": line,
        "code": _short(error.get("code"), 200, "an error's code"),
        "function": _short(error.get("function"), 80, "an error's function"),
    }


CHANGE_KINDS = ("in_place", "rebound", "removed", "added", "resized")


def _changes(value: Any) -> list[dict]:
    """How the inputs changed beyond values in place (`execute.input_changes`), validated."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_NAMES:
        raise WireError("malformed changes")
    out = []
    for item in value:
        if not isinstance(item, dict) or item.get("how") not in CHANGE_KINDS:
            raise WireError("malformed change")
        change: dict[str, Any] = {"path": _short(item.get("path"), 120, "a change's path") or "",
                                  "how": item["how"]}
        if item["how"] in ("removed", "added"):
            change["keys"] = _names(item.get("keys"), "a change's keys")[:8]
        if item["how"] == "resized":
            for k in ("before", "after"):
                n = item.get(k)
                if not (isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_LINE):
                    raise WireError("malformed change")
                change[k] = n
        out.append(change)
    return out


def _chained(value: Any) -> dict | None:
    """Which chained call failed (`execute.Chained`), validated."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise WireError("malformed chained call")
    return {"function": _short(value.get("function"), 80, "a chained function") or "",
            "missing": _short(value.get("missing"), 120, "a chained item") or ""}


def decode_outcome(node: Any, buffers: list[bytes], budget: Budget | None = None) -> dict:
    """Validate and decode an outcome; raises WireError (and nothing else) if it is not well
    formed: a wrong type in any field is as malformed as a wrong tree."""
    budget = budget if budget is not None else Budget()
    if not isinstance(node, dict) or not isinstance(node.get("status"), str) \
            or node["status"] not in STATUSES:
        raise WireError("malformed outcome")
    grads_node = node.get("grads")
    grads = None
    if grads_node is not None:
        if not isinstance(grads_node, dict) or len(grads_node) > 64:
            raise WireError("malformed gradients")
        grads = {}
        for k, v in grads_node.items():
            g = decode(v, buffers, budget=budget)
            if not (g is None or type(g) is torch.Tensor or isinstance(g, Opaque)):
                raise WireError("a gradient that is not a tensor")
            grads[k[:120]] = g
    outcome = {
        "status": node["status"],
        "output": decode(node.get("output", {"t": "none"}), buffers, budget=budget),
        "grads": grads,
        "grad_error": _short(node.get("grad_error"), 300, "a gradient error"),
        "mutated": _names(node.get("mutated"), "mutated"),
        "forbidden": _names(node.get("forbidden"), "forbidden"),
        "refused_how": _kinds(node.get("refused_how")),
        "called": _names(node.get("called"), "called"),
        "error": decode_error(node.get("error")),
        # A check the process could not install (an old torch): said in the result, not fatal.
        "unchecked": _short(node.get("unchecked"), 200, "an unchecked note"),
    }
    changes = _changes(node.get("changes"))
    if changes:
        outcome["changes"] = changes
    unconnected = _names(node.get("unconnected"), "unconnected")
    if unconnected:
        outcome["unconnected"] = unconnected
    chained = _chained(node.get("chained"))
    if chained is not None:
        outcome["chained"] = chained
    return outcome


def roundtrip_outcome(outcome: dict, function: str = "") -> dict:
    """Pass an in-process outcome through the same encoding, so both paths judge plain data."""
    buffers: list[bytes] = []
    node = encode_outcome_safely(outcome, buffers, function)
    return decode_outcome(node, buffers)
