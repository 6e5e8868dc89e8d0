"""What is wrong with a case, as a value: a `Problem` has a kind, the facts found, and advice.

The comparisons find facts (shapes, the largest difference, the error raised, the missing key)
and make a `Problem` of them; the words a student reads are made from the facts in one place,
`words.py`. Advice (what to do about it) is a field of its own, so
that a later step that knows more (another question's result, a named mistake) replaces or
drops it without touching the rest of the message.

Authors may still give their own words: `Problem(kind, message)` (and a hidden case's message
as the third argument) says exactly that.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from . import words


@dataclass(frozen=True)
class Advice:
    """What to do about a problem, said right after it. `kind` says which advice it is, for
    the steps that replace or drop it (`runner`): "shape" (a shape error's line), "overflow"
    (NaN on large inputs), "unpack", "in_place", "roundtrip", "helper" (the line is not the
    place: a failing helper is)."""

    kind: str
    public: str
    hidden: str | None = None

    def text(self, hidden: bool) -> str:
        return self.hidden if hidden and self.hidden is not None else self.public


@dataclass(frozen=True, init=False)
class Problem:
    """One thing wrong with a case. `kind` groups problems in reports (shape, values,
    gradient...); `facts` are what the words are made from (`words.py`); `advice` is said after
    them."""

    kind: str
    facts: Mapping[str, Any] = field(default_factory=dict)
    advice: Advice | None = None

    def __init__(self, kind: str, public: str | None = None, hidden: str | None = None, *,
                 facts: Mapping[str, Any] | None = None, advice: Advice | None = None):
        data = dict(facts or {})
        if public is not None:      # an author's own words (`Problem(kind, message)`)
            data[words.GIVEN] = public
            if hidden is not None:
                data[words.GIVEN_HIDDEN] = hidden
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "facts", data)
        object.__setattr__(self, "advice", advice)

    @classmethod
    def of(cls, kind: str, advice: Advice | None = None, **facts: Any) -> "Problem":
        """A problem of the engine's own kinds, worded by `words.py` from `facts`."""
        return cls(kind, facts=facts, advice=advice)

    def text(self, hidden: bool) -> str:
        """The message a student reads: for a hidden case, one that never quotes the hidden
        expected values."""
        said = words.say(self.kind, self.facts)
        head = said.hidden if hidden and said.hidden is not None else said.public
        if self.advice is not None:
            head += self.advice.text(hidden)
        return head + (f"\n{said.more}" if said.more else "")

    @property
    def public(self) -> str:
        return self.text(False)

    @property
    def hidden(self) -> str:
        return self.text(True)

    def with_advice(self, advice: Advice | None) -> "Problem":
        """The same problem with other advice (None: none)."""
        return replace(self, advice=advice)


