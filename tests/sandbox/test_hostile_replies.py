"""Every reply of a worker is hostile data: crafted replies, decoded and validated by the trusted
side, fail in one way only (WireError, which the session turns into MalformedReply), and cost
bounded memory whatever they say."""
from __future__ import annotations

import socket
import threading
import tracemalloc
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from autograder.sandbox import wire
from autograder.sandbox.execute import run_call
from autograder.model.limits import Limits
from autograder.sandbox.protocol import decode_outcome, encode_outcome, roundtrip_outcome
from autograder.sandbox.session import (MALFORMED, MalformedReply, WorkerSession, WorkerStopped,
                                        _load_result)

F32 = {"t": "tensor", "dtype": "float32", "shape": [2], "torch_dtype": "float32",
       "requires_grad": False}
TWO_FLOATS = np.arange(2, dtype=np.float32).tobytes()


def outcome(**fields) -> dict:
    base = {"status": "ok", "output": {"t": "none"}, "grads": None, "grad_error": None,
            "mutated": [], "forbidden": [], "called": [], "error": None}
    return {**base, **fields}


def scalar(kind: str, v) -> dict:
    return {"t": "scalar", "kind": kind, "v": v}


def nested(depth: int) -> dict:
    node = {"t": "none"}
    for _ in range(depth):
        node = {"t": "list", "items": [node]}
    return node


# ------------------------------------------------------------------ decode_outcome

MALFORMED_OUTCOMES = {
    "status not a string": (outcome(status=["ok"]), []),
    "unknown status": (outcome(status="passed"), []),
    "outcome not an object": ([], []),
    "float that is no float repr": (outcome(output=scalar("float", "not-a-float")), []),
    "float word in another spelling": (outcome(output=scalar("float", "Infinity")), []),
    "float as a list": (outcome(output=scalar("float", [1.0])), []),
    "bool as an int": (outcome(output=scalar("bool", 1)), []),
    "int as a bool": (outcome(output=scalar("int", True)), []),
    "int beyond 64 bits": (outcome(output=scalar("int", 2**70)), []),
    "float from a huge int": (outcome(output=scalar("float", 10**400)), []),
    "str that is a list": (outcome(output={"t": "str", "v": ["x"] * 3}), []),
    "opaque type that is a dict": (outcome(output={"t": "other", "type": {"a": 1}}), []),
    "negative buffer index": (outcome(output={**F32, "buf": -1}), [TWO_FLOATS]),
    "buffer index out of range": (outcome(output={**F32, "buf": 1}), [TWO_FLOATS]),
    "buffer index as a bool": (outcome(output={**F32, "buf": True}), [TWO_FLOATS, TWO_FLOATS]),
    "buffer index as a string": (outcome(output={**F32, "buf": "0"}), [TWO_FLOATS]),
    "buffer referenced twice": (outcome(output={"t": "tuple", "items": [
        {**F32, "buf": 0}, {**F32, "buf": 0}]}), [TWO_FLOATS]),
    "buffer shared by output and gradient": (outcome(output={**F32, "buf": 0},
                                                     grads={"0/0": {**F32, "buf": 0}}),
                                             [TWO_FLOATS]),
    "inline data in a message": (outcome(output={**F32, "data": [{"x": 1}, [2]]}), []),
    "dtype as a list": (outcome(output={**F32, "dtype": ["float32"], "buf": 0}), [TWO_FLOATS]),
    "shape with a string": (outcome(output={**F32, "shape": ["2"], "buf": 0}), [TWO_FLOATS]),
    "shape with a bool": (outcome(output={**F32, "shape": [True, 2], "buf": 0}), [TWO_FLOATS]),
    "negative shape": (outcome(output={**F32, "shape": [-2], "buf": 0}), [TWO_FLOATS]),
    "bfloat16 of ints": (outcome(output={**F32, "dtype": "int32", "torch_dtype": "bfloat16",
                                         "buf": 0}), [TWO_FLOATS]),
    "dict where a list is expected": (outcome(output={"t": "list", "items": {"0": {}}}), []),
    "list where a dict is expected": (outcome(output={"t": "dict", "items": []}), []),
    "too deep": (outcome(output=nested(wire.MAX_DEPTH + 3)), []),
    "mutated as a dict": (outcome(mutated={"0/0": False}), []),
    "called with a dict": (outcome(called=[{"fn": 1}]), []),
    "forbidden as a string": (outcome(forbidden="torch.softmax"), []),
    "error as a string": (outcome(status="error", error="boom"), []),
    "error line as a string": (outcome(status="error", error={"type": "E", "line": "12"}), []),
    "error line as a bool": (outcome(status="error", error={"type": "E", "line": True}), []),
    "error line huge": (outcome(status="error", error={"type": "E", "line": 10**30}), []),
    "error message as a list": (outcome(status="error", error={"message": ["x"]}), []),
    "grads as a list": (outcome(grads=[{"t": "none"}]), []),
    "gradient that is a string": (outcome(grads={"0/0": {"t": "str", "v": "x"}}), []),
    "gradient that is a list of tensors": (outcome(grads={"0/0": {"t": "list", "items": [
        {**F32, "buf": 0}]}}), [TWO_FLOATS]),
    "grad_error as an int": (outcome(grad_error=3), []),
}


@pytest.mark.parametrize("name", sorted(MALFORMED_OUTCOMES))
def test_malformed_outcomes_fail_as_wire_errors_only(name):
    node, buffers = MALFORMED_OUTCOMES[name]
    with pytest.raises(wire.WireError):
        decode_outcome(node, list(buffers))


def test_honest_outcomes_still_decode_to_plain_data():
    x = torch.randn(2, 3, requires_grad=True)
    got = roundtrip_outcome(run_call(lambda t: (t.softmax(-1), {"n": 3, "f": float("nan")}),
                                     (x,), {}, upstream=(torch.ones(2, 3), {"n": None, "f": None}),
                                     want_grad=True))
    assert got["status"] == "ok" and type(got["output"][0]) is torch.Tensor
    assert got["output"][1]["n"] == 3 and np.isnan(got["output"][1]["f"])
    assert set(got["grads"]) == {"0/0"} and got["grads"]["0/0"].shape == (2, 3)
    err = roundtrip_outcome(run_call(lambda: 1 / 0, (), {}))
    assert err["status"] == "error" and err["error"]["type"] == "ZeroDivisionError"
    assert isinstance(err["error"]["line"], int)


def test_every_reference_counts_against_one_budget():
    big = np.zeros(64, dtype=np.float32).tobytes()
    node = {**F32, "shape": [64]}
    budget = wire.Budget(limit=300)
    wire.decode({**node, "buf": 0}, [big, big], budget=budget)    # 256 bytes: within
    with pytest.raises(wire.WireError, match="size limit"):
        wire.decode({**node, "buf": 1}, [big, big], budget=budget)  # 512 in all: beyond


def test_a_releasing_budget_drops_each_raw_buffer_once_copied():
    buffers = [TWO_FLOATS, TWO_FLOATS]
    tree = {"t": "tuple", "items": [{**F32, "buf": 0}, {**F32, "buf": 1}]}
    a, b = wire.decode(tree, buffers, budget=wire.Budget(release=True))
    assert buffers == [b"", b""] and torch.equal(a, b) and a.tolist() == [0.0, 1.0]
    a.add_(1)   # the decoded arrays own their memory
    assert b.tolist() == [0.0, 1.0]


def test_one_large_buffer_referenced_thousands_of_times_costs_it_once():
    """64 x 64 nodes on one 64 MiB buffer: copying per node would need 256 GiB."""
    node = {**F32, "shape": [16 * 2**20], "buf": 0}
    tree = {"t": "tuple", "items": [{"t": "tuple", "items": [node] * 64}] * 64}
    buffers = [bytes(64 * 2**20)]
    tracemalloc.start()
    try:
        with pytest.raises(wire.WireError, match="referenced twice"):
            decode_outcome(outcome(output=tree), buffers, wire.Budget(release=True))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * 2**20, peak


def test_an_honest_sender_never_exceeds_the_receivers_limits():
    nested = [[list(range(64)) for _ in range(64)] for _ in range(4)]   # 16k numbers
    buffers: list[bytes] = []
    node = wire.encode(nested, buffers)
    back = wire.decode(node, buffers)

    def leaves(v):
        return [x for i in v for x in leaves(i)] if isinstance(v, list) else [v]

    numbers = [v for v in leaves(back) if isinstance(v, int)]
    assert 1000 < len(numbers) < wire.MAX_NODES
    assert isinstance(leaves(back)[-1], wire.Opaque)   # the rest: "value too large to check"
    assert isinstance(wire.decode(wire.encode(2**70, None), None), wire.Opaque)
    assert wire.decode(wire.encode(2**63 - 1, None), None) == 2**63 - 1


# ------------------------------------------------------------------ load replies

API = ["softmax", "causal_mask"]


def good_load(**fields) -> dict:
    return {"ok": True, "defined": {"softmax": {"kind": "function", "params": ["x", "dim"]}},
            **fields}


MALFORMED_LOADS = {
    "ok as a string": {"ok": "yes", "defined": {}},
    "defined as a list": good_load(defined=[["softmax", "function"]]),
    "a name never asked for": good_load(defined={"evil": {"kind": "function", "params": []}}),
    "kind as an int": good_load(defined={"softmax": {"kind": 1, "params": []}}),
    "params with an int": good_load(defined={"softmax": {"kind": "function", "params": [1]}}),
    "params with a dict": good_load(defined={"softmax": {"kind": "function",
                                                         "params": [{"a": 2}]}}),
    "params as a string": good_load(defined={"softmax": {"kind": "function", "params": "x"}}),
    "entry as a list": good_load(defined={"softmax": ["function"]}),
    "cell errors as a dict": good_load(cell_errors={"cell": 1}),
    "cell number as a string": good_load(cell_errors=[{"cell": "1", "status": "error"}]),
    "cell status unknown": good_load(cell_errors=[{"cell": 1, "status": "passed"}]),
    "cell syntax as a string": good_load(cell_errors=[{"cell": 1, "status": "error",
                                                       "syntax": "bad"}]),
    "answers as a list": good_load(answers=[1]),
    "an answer never asked for": good_load(answers={"other": {"t": "none"}}),
    "an answer that does not decode": good_load(answers={"a": scalar("float", "x")}),
    "failure with an unknown status": {"ok": False, "status": "passed", "error": None},
    "failure with an error list": {"ok": False, "status": "error", "error": ["x"]},
}


@pytest.mark.parametrize("name", sorted(MALFORMED_LOADS))
def test_malformed_load_replies_fail_as_wire_errors_only(name):
    with pytest.raises(wire.WireError):
        _load_result(MALFORMED_LOADS[name], [], API, ["a"])


def test_honest_load_replies_pass_validation():
    loaded = _load_result(good_load(answers={"a": scalar("int", 3)}, cell_errors=[
        {"cell": 2, "status": "error", "error": {"type": "E", "message": "m", "line": 1},
         "syntax": None}]), [], API, ["a"])
    assert loaded.ok and loaded.defined["softmax"]["params"] == ["x", "dim"]
    assert loaded.answers == {"a": 3} and loaded.cell_errors[0]["cell"] == 2
    failed = _load_result({"ok": False, "status": "memory", "error": {"type": "MemoryError"},
                           "syntax": None}, [], API, [])
    assert not failed.ok and failed.status == "memory"


# ------------------------------------------------------------------ a session and a fake worker

class FakeSandbox:
    """Stands in for the fork server: the 'worker' is a thread on the other end of a socket
    that answers each request with the next crafted reply (bytes, or a header to pack)."""

    description = "test"

    def __init__(self, replies: list):
        self.replies = list(replies)
        self.finished = 0

    def spawn(self, limits, forbidden=(), plans=None):
        ours, theirs = socket.socketpair()
        threading.Thread(target=self._serve, args=(theirs,), daemon=True).start()
        return 1, ours, 2**40

    def armed(self, wid):
        return True       # what the fork server reads of a worker whose import is over

    def _serve(self, sock):
        reader = wire.Reader(sock)
        try:
            while self.replies:
                reader.message()
                reply = self.replies.pop(0)
                if reply is None:
                    break
                sock.sendall(reply if isinstance(reply, bytes) else wire.pack(*reply))
        except (EOFError, OSError):
            pass
        finally:
            sock.close()

    def finish(self, wid, grace=0.0, wait=True):
        self.finished += 1
        return {"exit": 0} if wait else {}


def session_for(replies: list) -> tuple[WorkerSession, FakeSandbox]:
    fake = FakeSandbox(replies)
    return WorkerSession(fake, "", "attention.py", "attention", API, Limits()), fake


LOADED = (good_load(), [])


def call(session: WorkerSession) -> dict:
    return session.call("softmax", (torch.ones(2),), {}, upstream=None, want_grad=False,
                        forbidden=[])


def test_a_malformed_outcome_ends_the_submission_for_good():
    s, fake = session_for([LOADED, ({"ok": True, "outcome": outcome(
        output=scalar("float", "not-a-float"))}, []), ({"ok": True, "outcome": outcome()}, [])])
    assert s.load().ok
    with pytest.raises(MalformedReply) as e:
        call(s)
    assert str(e.value).startswith(MALFORMED) and "bad float" in str(e.value)
    assert s.malformed == "bad float" and s.sock is None and fake.finished == 1
    with pytest.raises(MalformedReply):   # no new worker, no further call
        call(s)
    assert len(fake.replies) == 1


def test_a_forged_frame_is_a_malformed_reply():
    bad_json = b"\x00\x00\x00\x05{nope"
    s, _ = session_for([LOADED, bad_json])
    s.load()
    with pytest.raises(MalformedReply, match="not JSON"):
        call(s)


def test_a_refused_call_is_a_malformed_reply():
    s, _ = session_for([LOADED, ({"ok": False, "status": "error"}, [])])
    s.load()
    with pytest.raises(MalformedReply, match="refused"):
        call(s)


def test_a_malformed_load_reply_is_a_malformed_reply():
    s, _ = session_for([({"ok": True, "defined": {"softmax": {"kind": "function",
                                                                "params": [1, None]}}}, [])])
    with pytest.raises(MalformedReply, match="parameters"):
        s.load()


def test_a_worker_that_dies_is_not_malformed():
    s, _ = session_for([LOADED, None])
    s.load()
    with pytest.raises(WorkerStopped) as e:
        call(s)
    assert not isinstance(e.value, MalformedReply) and s.malformed is None


def test_an_honest_reply_passes_through_the_session():
    buffers: list[bytes] = []
    node = encode_outcome({"status": "ok", "output": torch.arange(3.0)}, buffers)
    s, _ = session_for([LOADED, ({"ok": True, "outcome": node}, buffers)])
    s.load()
    assert call(s)["output"].tolist() == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------ what diagnosis keeps

def test_diagnosis_keeps_no_huge_outcome_and_a_bounded_total():
    from autograder import diagnose

    small = {"output": torch.zeros(4)}
    huge = {"output": torch.zeros(diagnose.RECORD_FLOOR // 4 + 1)}   # beyond the floor
    session = diagnose.Session(assignment=None)
    session.note(SimpleNamespace(function="f", got=huge, expected=small), True)
    assert session.passed == {} and session.kept_bytes == 0
    fair = {"output": torch.zeros(diagnose.RECORD_FLOOR // 4)}
    n = diagnose.KEPT_BYTES // diagnose.RECORD_FLOOR
    for _ in range(n + 5):
        session.note(SimpleNamespace(function="f", got=fair, expected=fair), True)
    assert len(session.passed["f"]) == n and session.kept_bytes == diagnose.KEPT_BYTES


# ------------------------------------------------------------------ what one reply may cost
# wire.py's bound, through the real path (the session's reader, `unpack`, `decode_outcome`
# with the session's releasing budget), with replies built by the worker's own encoder.

ROOMY = Limits(question_seconds=600, submission_seconds=600)   # moving 256 MiB is no timeout
BIGGEST = wire.MAX_ARRAY_BYTES // 4        # float32s in the largest array a reply may hold


def roomy_session(replies: list) -> WorkerSession:
    return WorkerSession(FakeSandbox(replies), "", "attention.py", "attention", API, ROOMY)


def reply_of(*tensors: torch.Tensor) -> bytes:
    """A call's reply as the worker frames it: `encode_outcome`, then `wire.pack`."""
    buffers: list[bytes] = []
    node = encode_outcome({"status": "ok", "output": tuple(tensors)}, buffers)
    return wire.pack({"ok": True, "outcome": node}, buffers)


def test_a_reply_at_the_bound_is_accepted_within_the_documented_cost():
    """Four arrays of the largest size, MAX_MESSAGE in all: decoded whole, and receiving and
    decoding it costs the grading process at most the ~420 MiB wire.py states."""
    assert 4 * wire.MAX_ARRAY_BYTES == wire.MAX_MESSAGE
    frame = reply_of(*(torch.full((BIGGEST,), float(i)) for i in range(4)))
    s = roomy_session([LOADED, frame])
    s.load()
    tracemalloc.start()
    try:
        got = call(s)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    out = got["output"]
    assert [t.shape[0] for t in out] == [BIGGEST] * 4
    assert [t[-1].item() for t in out] == [0.0, 1.0, 2.0, 3.0]
    assert s.malformed is None
    assert peak <= 420 * 2**20, peak / 2**20


def test_a_reply_beyond_the_bound_is_a_malformed_reply(monkeypatch):
    """One float more than the bound: refused as the README says, and the submission ends.
    An honest sender never makes such a reply (`wire.encode` sends the last array as "too
    large to check"): this one comes from a sender that skips that bound, as a forged one
    would."""
    monkeypatch.setattr(wire, "_fits", lambda buffers, nbytes: True)
    frame = reply_of(*(torch.zeros(BIGGEST) for _ in range(4)), torch.zeros(1))
    monkeypatch.undo()
    s = roomy_session([LOADED, frame, ({"ok": True, "outcome": outcome()}, [])])
    s.load()
    with pytest.raises(MalformedReply) as e:
        call(s)
    assert str(e.value) == f"{MALFORMED} (message larger than the size limit)"
    with pytest.raises(MalformedReply):    # nothing more runs for this submission
        call(s)


@pytest.mark.parametrize("declared, message", [
    # 4-byte header length beyond MAX_HEADER, and nothing after it: refused before reading
    ((wire.MAX_HEADER + 1).to_bytes(4, "big"), "message header too large"),
    # an honest header announcing one buffer, whose declared length is one byte too many
    (wire.pack({"ok": True, "outcome": {}}, [b""])[:-8]
     + (wire.MAX_ARRAY_BYTES + 1).to_bytes(8, "big"), "message larger than the size limit"),
], ids=["header", "buffer"])
def test_declared_sizes_beyond_the_bound_are_refused_unread(declared, message):
    s = roomy_session([LOADED, declared])
    s.load()
    tracemalloc.start()
    try:
        with pytest.raises(MalformedReply, match=message):
            call(s)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak     # what was declared was never allocated
