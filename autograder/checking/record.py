"""One check as data: what `Question.check` called, on which inputs, and both outcomes. The
diagnosis session of the check's context keeps these records, to name the mistake behind a
failing case once the submission's last call is made (`autograder.diagnose`)."""
from __future__ import annotations

from dataclasses import dataclass

from ..memo.fingerprint import call_digest
from ..model.assignment import Assignment
from .expected import digest_name


@dataclass
class CheckRecord:
    """One `Question.check` call: its inputs, the reference's and the student's outcomes."""

    assignment: Assignment
    question: str
    function: str
    args: tuple
    kwargs: dict
    expected: dict
    got: dict
    seed: int
    want_grad: bool
    large_inputs: bool
    tolerance: dict
    part: tuple = ()        # the place of the output the check compares (all of it: ())
    _key: bytes | None = None

    @property
    def key(self) -> bytes:
        """The call's digest: equal keys, equal calls (and the same upstream gradient)."""
        if self._key is None:
            self._key = call_digest(digest_name(self.function, self.part), self.seed,
                                    self.want_grad, self.args, self.kwargs)
        return self._key
