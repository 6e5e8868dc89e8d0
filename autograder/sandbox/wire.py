"""Safe encoding of values that cross a trust boundary or go to disk.

A value (a tensor, an ndarray, a number, a NumPy scalar, None, a string, or tuples, lists,
dicts, namedtuples and dataclasses of those) becomes a JSON-able *tree* plus a list of raw byte
buffers. Decoding never unpickles: every array is checked for a known dtype, a sane shape and an
exact byte count before `np.frombuffer` touches it, and comes back as an exact base
`torch.Tensor` or `np.ndarray` (a subclass on the sending side gains nothing); a NumPy scalar
comes back as a NumPy scalar of its dtype; a namedtuple or a dataclass comes back as a `Record`
(its kind, its type's name and its fields, as data: the sender's class is never imported or
rebuilt). Dict keys travel as text. Snapshots use the same trees with array data inlined as JSON
lists.

What one message from the other side can cost the receiver is bounded whatever it says:

* framing (`unpack`): a JSON header of at most MAX_HEADER (4 MiB) bytes, which Python turns into
  at most about 25 times as much in objects (~100 MiB for a header of empty objects; measured),
  and at most 4096 buffers of at most MAX_ARRAY_BYTES (64 MiB) each, MAX_MESSAGE (256 MiB) in
  all, every size checked before it is read, each buffer read into one allocation;
* decoding (`decode` with a `Budget` per message): every array node counts its bytes, each time
  it is referenced, against MAX_MESSAGE, and a buffer may be referenced only once, so a tree of
  many nodes pointing at one large buffer cannot multiply it. A receiver that lets the budget
  release buffers (`Budget(release=True)`) drops each raw buffer once it is copied out, so the
  decoded message costs at most MAX_MESSAGE plus one buffer in flight.

The sender keeps an honest message within these bounds (`encode`): an array that would take
its message past MAX_MESSAGE or 4096 buffers travels as an opaque "too large to check" node, so
a large honest answer fails its case saying so, and only a forged message is refused.

So the trusted side holds at most ~256 MiB of arrays + 64 MiB in flight + ~100 MiB of header
objects for one reply, about 420 MiB above its baseline, and lets go of it after the case.
Anything else (a wrong type anywhere, an unknown kind, a bad float, an int beyond 64 bits, a
buffer index out of range or used twice, inline data where buffers are expected) is a WireError.
"""
from __future__ import annotations

import dataclasses
import json
import math
import socket
import struct
import time
from typing import Any, Protocol

import numpy as np
import torch

from .values import Opaque, Record  # noqa: F401 - part of the wire's data, re-exported


# Only plain numeric dtypes travel; names are numpy's.
_NUMPY_DTYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8",
    "float16", "float32", "float64", "complex64", "complex128",
}
_TORCH_TO_NUMPY = {
    torch.bool: "bool", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
    torch.int64: "int64", torch.uint8: "uint8", torch.float16: "float16",
    torch.float32: "float32", torch.float64: "float64", torch.complex64: "complex64",
    torch.complex128: "complex128",
}
# NumPy builds `dtype.name` anew at each access; these are looked up.
_DTYPE_NAMES = {np.dtype(n): n for n in _NUMPY_DTYPES}
_DTYPES = {n: np.dtype(n) for n in _NUMPY_DTYPES}

MAX_DEPTH = 8
MAX_ITEMS = 256      # items of one container (keys, fields); a larger one travels as opaque
MAX_STR = 500
MAX_ARRAY_BYTES = 64 * 2**20
MAX_NDIM = 8
MAX_HEADER = 4 * 2**20       # a message's JSON header
MAX_MESSAGE = 256 * 2**20    # a message's buffers, and what its trees may decode to
MAX_NODES = 2048     # nodes in one encoded value: an honest tree never needs more
MAX_INT = 2**64      # ints travel up to 64 bits; a larger one is no answer to any question
_FLOAT_WORDS = {"nan", "inf", "-inf"}   # how encode writes the non-finite floats


class WireError(ValueError):
    """Data that does not decode: malformed, oversized or of an unknown kind."""


def torch_dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


class Memo(Protocol):
    """Where `encode` may remember tensors' encodings (`tensor_cache.TensorMemo` on the trusted
    side): `get(tensor)` gives what `put(tensor, value, nbytes)` stored while it is unchanged."""

    def get(self, t: torch.Tensor) -> Any: ...

    def put(self, t: torch.Tensor, value: Any, nbytes: int = 0) -> None: ...


def encode(value: Any, buffers: list[bytes] | None, depth: int = 0,
           memo: Memo | None = None, _nodes: list[int] | None = None) -> dict:
    """Encode `value` into a tree; arrays go to `buffers` (or inline if `buffers` is None).
    At most MAX_NODES nodes are made: the rest of a larger value becomes an opaque node, so an
    honest sender never makes a message the receiver refuses as too large."""
    if _nodes is None:
        _nodes = [0]
    _nodes[0] += 1
    if _nodes[0] > MAX_NODES:
        return {"t": "other", "type": "value too large to check"}
    if depth > MAX_DEPTH:
        return {"t": "other", "type": "deeply nested value"}
    if isinstance(value, torch.Tensor) and memo is not None and buffers is not None:
        hit = memo.get(value)
        if hit is None or hit[0].get("requires_grad", value.requires_grad) != \
                value.requires_grad:
            mine: list[bytes] = []
            node = encode(value, mine, depth)
            hit = ({k: v for k, v in node.items() if k != "buf"}, mine[0] if mine else None)
            memo.put(value, hit, len(hit[1] or b""))
        node, data = hit
        if data is None:
            return dict(node)
        if not _fits(buffers, len(data)):
            return _too_large(value)
        buffers.append(data)
        return {**node, "buf": len(buffers) - 1}
    if isinstance(value, torch.Tensor):
        t = torch.Tensor.detach(value)
        dtype = t.dtype
        if dtype == torch.bfloat16:  # numpy has no bfloat16: travel as float32, say what it was
            t = t.to(torch.float32)
        if t.dtype not in _TORCH_TO_NUMPY:
            return {"t": "other", "type": f"tensor of dtype {torch_dtype_name(dtype)}"}
        if t.numel() * t.element_size() > MAX_ARRAY_BYTES or t.ndim > MAX_NDIM:
            return {"t": "other", "type": f"tensor too large to check, of shape {tuple(t.shape)}"}
        if buffers is not None and not _fits(buffers, t.numel() * t.element_size()):
            return _too_large(t)
        arr = torch.Tensor.numpy(torch.Tensor.contiguous(torch.Tensor.cpu(t)), force=True)
        node = _array_node(np.asarray(arr), buffers)
        node.update(t="tensor", torch_dtype=torch_dtype_name(dtype),
                    requires_grad=bool(value.requires_grad))
        return node
    if isinstance(value, np.ndarray):
        arr = np.ndarray.view(value, np.ndarray)
        if arr.dtype.name not in _NUMPY_DTYPES:
            return {"t": "other", "type": f"ndarray of dtype {arr.dtype.name}"}
        if arr.nbytes > MAX_ARRAY_BYTES or arr.ndim > MAX_NDIM:
            return {"t": "other", "type": f"array too large to check, of shape {arr.shape}"}
        if buffers is not None and not _fits(buffers, arr.nbytes):
            return _too_large(arr)
        node = _array_node(arr, buffers)
        node["t"] = "ndarray"
        return node
    if value is None:
        return {"t": "none"}
    if isinstance(value, np.generic):
        return _numpy_scalar_node(value)
    if isinstance(value, bool):
        return {"t": "scalar", "kind": "bool", "v": bool(value)}
    if isinstance(value, int):
        if not -MAX_INT < value < MAX_INT:
            return {"t": "other", "type": "int too large to check"}
        return {"t": "scalar", "kind": "int", "v": int(value)}
    if isinstance(value, float):
        v = float(value)
        return {"t": "scalar", "kind": "float", "v": v if math.isfinite(v) else repr(v)}
    if isinstance(value, str):
        return {"t": "str", "v": str(value)[:MAX_STR]}
    if isinstance(value, Record):      # one decoded before (an expected value, re-encoded)
        kind, type_name, fields = value.kind, value.type_name, list(value.fields.items())
    else:
        fields = record_fields(value)
        kind = Record.NAMEDTUPLE if isinstance(value, tuple) else Record.DATACLASS
        type_name = type(value).__name__
    if fields is not None:
        if len(fields) > MAX_ITEMS:
            return _too_many(f"{kind} {type_name}", len(fields))
        pairs = [[str(name)[:MAX_STR], encode(v, buffers, depth + 1, memo, _nodes)]
                 for name, v in fields]
        return {"t": "record", "kind": kind, "type": str(type_name)[:MAX_STR], "fields": pairs}
    if isinstance(value, (tuple, list)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        if len(value) > MAX_ITEMS:
            return _too_many(f"{kind}", len(value))
        return {"t": kind, "items": [encode(v, buffers, depth + 1, memo, _nodes)
                                     for v in list(value)]}
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            return _too_many("dict", len(value))
        items = {}
        for k, v in list(value.items()):
            key = str(k)[:MAX_STR]
            if key in items:
                return {"t": "other", "type": "dict with two keys written the same way "
                                              f"({key!r}): keys are compared as text"}
            items[key] = encode(v, buffers, depth + 1, memo, _nodes)
        return {"t": "dict", "items": items}
    return {"t": "other", "type": type(value).__name__[:MAX_STR]}


def record_fields(value: Any) -> list[tuple[str, Any]] | None:
    """(name, value) of each field of a namedtuple or a dataclass instance, in order; None for
    anything else. Runs where the value was made (its attributes may be the sender's code)."""
    cls = type(value)
    if isinstance(value, tuple):
        names = getattr(cls, "_fields", None)
        if not (isinstance(names, tuple) and len(names) == tuple.__len__(value)
                and all(isinstance(n, str) for n in names)):
            return None
        return [(str(n), tuple.__getitem__(value, i)) for i, n in enumerate(names)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    return None


def _too_many(what: str, n: int) -> dict:
    return {"t": "other", "type": f"{what} of {n} items, too many to check (at most "
                                  f"{MAX_ITEMS})"}


_SCALAR_KINDS = {"b": "bool", "i": "int", "u": "int", "f": "float"}


def _numpy_scalar_node(value: np.generic) -> dict:
    """A NumPy scalar, with its dtype (so that it is compared with its dtype's tolerance)."""
    dtype = np.dtype(type(value))
    kind = _SCALAR_KINDS.get(dtype.kind)
    if kind is None or dtype.name not in _NUMPY_DTYPES:
        return {"t": "other", "type": f"NumPy scalar of dtype {dtype.name}"}
    v = value.item()
    if kind == "float":
        v = float(v) if math.isfinite(v) else repr(float(v))
    return {"t": "scalar", "kind": kind, "v": v, "dtype": dtype.name}


MAX_BUFFERS = 4096   # buffers in one message (`unpack` refuses more)


def _fits(buffers: list[bytes], nbytes: int) -> bool:
    """Whether one more buffer of `nbytes` keeps the message within what `unpack` accepts: an
    honest reply is bounded as a whole here, where it is made, so the receiver never sees an
    honest message it must refuse."""
    return len(buffers) < MAX_BUFFERS and sum(map(len, buffers)) + nbytes <= MAX_MESSAGE


def _too_large(value: Any) -> dict:
    noun = "array" if isinstance(value, np.ndarray) else "tensor"
    return {"t": "other", "type": f"{noun} of shape {tuple(value.shape)} too large to check: "
                                  f"the answer's {noun}s pass {MAX_MESSAGE // 2**20} MiB in all"}


def _array_node(arr: np.ndarray, buffers: list[bytes] | None) -> dict:
    if not arr.dtype.isnative:   # bytes travel in this machine's order, as decode reads them
        arr = arr.astype(arr.dtype.newbyteorder("="))
    node: dict[str, Any] = {"dtype": _DTYPE_NAMES.get(arr.dtype) or arr.dtype.name,
                            "shape": [int(s) for s in arr.shape]}
    if buffers is None:
        data = arr.astype(np.complex128 if arr.dtype.kind == "c" else arr.dtype)
        node["data"] = _to_json_list(data)
    else:
        node["buf"] = len(buffers)
        buffers.append(np.ascontiguousarray(arr).tobytes())
    return node


def _to_json_list(arr: np.ndarray) -> Any:
    if arr.dtype.kind == "c":
        return [_to_json_list(arr.real), _to_json_list(arr.imag)]
    if arr.dtype.kind == "f":
        flat = [x if math.isfinite(x) else repr(x) for x in arr.astype(np.float64).ravel().tolist()]
        return flat
    return arr.ravel().tolist()


class Budget:
    """What the decoding of one message may still cost: bytes of arrays (every reference
    counts) and which buffers were used (each at most once). With `release`, each raw buffer is
    dropped from the message's list once copied out, so raw and decoded data do not add up."""

    def __init__(self, limit: int = MAX_MESSAGE, release: bool = False):
        self.limit, self.release = limit, release
        self.used: set[int] = set()
        self.total = 0

    def take(self, nbytes: int) -> None:
        self.total += nbytes
        if self.total > self.limit:
            raise WireError("message decodes to more than the size limit")

    def use(self, index: Any, buffers: list | None) -> bytes | bytearray:
        if buffers is None or not _is_int(index) or not 0 <= index < len(buffers):
            raise WireError("array without its data")
        if index in self.used:
            raise WireError("buffer referenced twice")
        self.used.add(index)
        raw = buffers[index]
        if self.release:
            buffers[index] = b""
        return raw


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _text(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise WireError(f"{what} is not a string")
    return v[:MAX_STR]


def decode(node: Any, buffers: list[bytes] | None, depth: int = 0,
           budget: Budget | None = None) -> Any:
    """Decode a tree made by `encode`; raises WireError on anything unexpected (and on nothing
    else). Several calls on one message share one `budget`."""
    budget = budget if budget is not None else Budget()
    try:
        return _decode(node, buffers, depth, budget)
    except WireError:
        raise
    except (TypeError, ValueError, OverflowError, KeyError, IndexError, AttributeError,
            RecursionError) as e:
        raise WireError(f"malformed value tree ({type(e).__name__})") from None


def _decode(node: Any, buffers: list[bytes] | None, depth: int, budget: Budget) -> Any:
    if depth > MAX_DEPTH + 1 or not isinstance(node, dict):
        raise WireError("malformed value tree")
    t = node.get("t")
    if t in ("tensor", "ndarray"):
        arr = _decode_array(node, buffers, budget)
        if t == "ndarray":
            return arr
        want = node.get("torch_dtype")
        if want is not None and not isinstance(want, str):
            raise WireError("malformed tensor dtype")
        tensor = torch.from_numpy(arr)
        if want == "bfloat16":    # sent as float32 (see encode)
            if arr.dtype != np.float32:
                raise WireError("malformed bfloat16 tensor")
            tensor = tensor.to(torch.bfloat16)
        return tensor
    if t == "none":
        return None
    if t == "scalar":
        value = _decode_scalar(node.get("kind"), node.get("v"))
        dtype = node.get("dtype")
        if dtype is None:
            return value
        return _numpy_scalar(dtype, node.get("kind"), value)
    if t == "str":
        return _text(node.get("v", ""), "a str value")
    if t in ("tuple", "list"):
        items = node.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise WireError("bad sequence")
        seq = [_decode(i, buffers, depth + 1, budget) for i in items]
        return tuple(seq) if t == "tuple" else seq
    if t == "dict":
        items = node.get("items")
        if not isinstance(items, dict) or len(items) > MAX_ITEMS:
            raise WireError("bad dict")
        return {str(k)[:MAX_STR]: _decode(v, buffers, depth + 1, budget)
                for k, v in items.items()}
    if t == "record":
        kind, pairs = node.get("kind"), node.get("fields")
        if kind not in (Record.DATACLASS, Record.NAMEDTUPLE) or not isinstance(pairs, list) \
                or len(pairs) > MAX_ITEMS:
            raise WireError("bad record")
        fields: dict[str, Any] = {}
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)) \
                    or pair[0][:MAX_STR] in fields:
                raise WireError("bad record field")
            fields[pair[0][:MAX_STR]] = _decode(pair[1], buffers, depth + 1, budget)
        return Record(kind, _text(node.get("type", "record"), "a type name"), fields)
    if t == "other":
        return Opaque(_text(node.get("type", "object"), "a type name"))
    raise WireError(f"unknown value kind {str(t)[:40]!r}")


def _decode_scalar(kind: Any, v: Any) -> bool | int | float:
    if kind == "bool":
        if not isinstance(v, bool):
            raise WireError("bad bool")
        return v
    if kind == "int":
        if not _is_int(v) or not -MAX_INT < v < MAX_INT:
            raise WireError("bad int")
        return int(v)
    if kind == "float":
        if isinstance(v, str) and v in _FLOAT_WORDS:
            return float(v)
        if isinstance(v, float) or (_is_int(v) and -MAX_INT < v < MAX_INT):
            return float(v)
        raise WireError("bad float")
    raise WireError("bad scalar")


def _numpy_scalar(dtype: Any, kind: Any, value: bool | int | float) -> np.generic:
    """A NumPy scalar of a known dtype whose kind matches the value's; an int must fit it."""
    if not isinstance(dtype, str) or dtype not in _NUMPY_DTYPES \
            or _SCALAR_KINDS.get(_DTYPES[dtype].kind) != kind:
        raise WireError("bad scalar dtype")
    if kind == "int":
        info = np.iinfo(_DTYPES[dtype])
        if not info.min <= value <= info.max:
            raise WireError("int outside its dtype")
    with np.errstate(all="ignore"):
        return _DTYPES[dtype].type(value)


def _decode_array(node: dict, buffers: list[bytes] | None, budget: Budget) -> np.ndarray:
    dtype_name = node.get("dtype")
    shape = node.get("shape")
    if not isinstance(dtype_name, str) or dtype_name not in _NUMPY_DTYPES:
        raise WireError(f"array of unsupported dtype {str(dtype_name)[:40]!r}")
    if (not isinstance(shape, list) or len(shape) > MAX_NDIM
            or not all(_is_int(s) and 0 <= s <= MAX_ARRAY_BYTES for s in shape)):
        raise WireError("array with a malformed shape")
    dtype = _DTYPES[dtype_name]
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if nbytes > MAX_ARRAY_BYTES:
        raise WireError("array larger than the size limit")
    budget.take(nbytes)
    if buffers is None:   # inline data (snapshots, which the trusted side wrote itself)
        if "data" not in node:
            raise WireError("array without its data")
        data = node["data"]
        if dtype.kind == "c":
            re = np.array([float(x) for x in data[0]], dtype=np.float64)
            im = np.array([float(x) for x in data[1]], dtype=np.float64)
            arr = (re + 1j * im).astype(dtype)
        elif dtype.kind == "f":
            arr = np.array([float(x) for x in data], dtype=np.float64).astype(dtype)
        else:
            arr = np.array(data, dtype=dtype)
        if arr.size != count:
            raise WireError("inline array of the wrong size")
        return arr.reshape(shape)
    if "data" in node:
        raise WireError("inline array data in a message")
    raw = budget.use(node.get("buf"), buffers)
    if len(raw) != nbytes:
        raise WireError("array data of the wrong size")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


# --- framing: one message = 4-byte header length, JSON header, then each buffer length-prefixed.

def pack(header: dict, buffers: list[bytes]) -> bytes:
    head = json.dumps({**header, "nbuf": len(buffers)}).encode()
    parts = [struct.pack("!I", len(head)), head]
    for b in buffers:
        parts.append(struct.pack("!Q", len(b)))
        parts.append(b)
    return b"".join(parts)


class Reader:
    """Reads whole messages from a socket with few system calls: it receives in large chunks
    and serves the small reads of `unpack` (lengths, header, buffers) from what it holds.
    With a `deadline` (time.monotonic()), a read not done by then raises socket.timeout."""

    CHUNK = 1 << 18

    def __init__(self, sock, deadline: float | None = None):
        self.sock, self.deadline = sock, deadline
        self._buf = bytearray()

    def _wait(self) -> None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout
            self.sock.settimeout(left)

    def read_exact(self, n: int) -> bytes | bytearray:
        if n > self.CHUNK:
            # A large buffer is received straight into one allocation of its size: no growing
            # intermediate copies of what may be 64 MiB.
            out = bytearray(n)
            view = memoryview(out)
            have = min(len(self._buf), n)
            view[:have] = self._buf[:have]
            del self._buf[:have]
            while have < n:
                self._wait()
                got = self.sock.recv_into(view[have:], n - have)
                if not got:
                    raise EOFError
                have += got
            view.release()
            return out
        while len(self._buf) < n:
            self._wait()
            chunk = self.sock.recv(self.CHUNK)
            if not chunk:
                raise EOFError
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def message(self) -> tuple[dict, list[bytes]]:
        return unpack(self.read_exact)


def unpack(read_exact) -> tuple[dict, list[bytes]]:
    """Read one message with `read_exact(n) -> bytes`, checking every size before reading."""
    (hlen,) = struct.unpack("!I", read_exact(4))
    if hlen > MAX_HEADER:
        raise WireError("message header too large")
    try:
        header = json.loads(read_exact(hlen))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        # ValueError also covers an integer too long to convert, which JSON itself allows.
        raise WireError("message header is not JSON") from e
    if not isinstance(header, dict):
        raise WireError("message header is not an object")
    nbuf = header.get("nbuf", 0)
    if not isinstance(nbuf, int) or not 0 <= nbuf <= 4096:
        raise WireError("bad buffer count")
    buffers, total = [], 0
    for _ in range(nbuf):
        (blen,) = struct.unpack("!Q", read_exact(8))
        total += blen
        if blen > MAX_ARRAY_BYTES or total > MAX_MESSAGE:
            raise WireError("message larger than the size limit")
        buffers.append(read_exact(blen))
    return header, buffers
