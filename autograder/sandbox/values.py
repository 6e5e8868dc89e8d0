"""The values the wire carries that are neither tensors nor plain data: an object the other side
could not express (`Opaque`) and a namedtuple or dataclass as data (`Record`). Kept apart from
`wire.py` (which needs torch and NumPy to encode arrays) so that what only reads results, the
class run's main process unpickling them, imports neither."""
from __future__ import annotations

from typing import Any


class Opaque:
    """A value the other side could not express as data (a custom object, a function...)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


class Record:
    """A namedtuple or a dataclass instance, as data: its kind, its type's name and its fields
    in order. Read its fields as attributes (`r.mean`), or as `r.fields`; a namedtuple's also
    by position and by unpacking, as the original allows."""

    DATACLASS = "dataclass"
    NAMEDTUPLE = "namedtuple"
    __slots__ = ("kind", "type_name", "fields")

    def __init__(self, kind: str, type_name: str, fields: dict[str, Any]):
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "type_name", type_name)
        object.__setattr__(self, "fields", dict(fields))

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "fields")[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Record is read-only")

    def _positional(self) -> list:
        if self.kind != Record.NAMEDTUPLE:
            raise TypeError(f"a dataclass ({self.type_name}) has no items by position")
        return list(self.fields.values())

    def __getitem__(self, index: int) -> Any:
        return self._positional()[index]

    def __iter__(self):
        return iter(self._positional())

    def __len__(self) -> int:
        return len(self._positional())

    def __reduce__(self):   # copies (never a decoding path: `wire.decode` reads wire trees)
        return (Record, (self.kind, self.type_name, self.fields))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.type_name}({inner})"
