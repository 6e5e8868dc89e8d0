"""Measuring diagnosis on a corpus, for `autograder diagnose-eval` and the tests: grade
`wrong/` and `correct/` submissions and compare the mistakes named with each file's
`# diagnosis:` header."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..model.results import diagnoses
from ..diagnose.variants import _Runner


def read_header(path: Path) -> dict[str, str]:
    """`# key: value` lines at the top of a corpus file."""
    header = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)", line)
        if not m:
            break
        header[m.group(1)] = m.group(2).strip()
    return header


NONE = "none"     # `# diagnosis: none`: a mistake the catalogue does not know; naming any is wrong


def wanted(header_value: str | None) -> set[str]:
    """The mistakes a `# diagnosis:` header allows: one id, or several comma-separated (two
    mistakes in one function are named together)."""
    return {x.strip() for x in (header_value or "").split(",") if x.strip()}


@dataclass
class Evaluation:
    wrong: list[tuple[str, str | None, list[str]]] = field(default_factory=list)
    correct: list[tuple[str, list[str]]] = field(default_factory=list)
    variant_errors: dict[tuple[str, str], str] = field(default_factory=dict)
    failing_cases: int = 0          # failing cases of the wrong submissions (not attempted aside)
    diagnosed_cases: int = 0        # ... of which a mistake is named

    @staticmethod
    def _right(want: str | None, got: list[str]) -> bool:
        allowed = wanted(want)
        return not got if allowed == {NONE} else bool(allowed & set(got))

    @staticmethod
    def _wrong(want: str | None, got: list[str]) -> bool:
        return bool(set(got) - wanted(want))

    @property
    def named_right(self) -> int:
        return sum(1 for _, want, got in self.wrong if self._right(want, got))

    @property
    def named_wrong(self) -> int:
        return sum(1 for _, want, got in self.wrong if self._wrong(want, got))

    @property
    def correct_diagnosed(self) -> int:
        return sum(1 for _, got in self.correct if got)

    def share(self, n: int) -> float:
        return n / len(self.wrong) if self.wrong else 0.0

    def meets(self, right: float = 0.9) -> bool:
        return (bool(self.wrong) and self.share(self.named_right) >= right
                and self.named_wrong == 0 and self.correct_diagnosed == 0)

    def report(self, verbose: bool = False) -> str:
        n = len(self.wrong)
        unknown = sum(1 for _, want, _ in self.wrong if want == NONE)
        lines = [
            f"wrong submissions: {n} ({unknown} with a mistake the catalogue does not know, "
            f"where naming nothing is right), correct submissions: {len(self.correct)}",
            f"  feedback names the right mistake: {self.named_right}/{n} "
            f"({100 * self.share(self.named_right):.1f}%, target >= 90%)",
            f"  feedback names a wrong mistake:   {self.named_wrong}/{n} "
            f"({100 * self.share(self.named_wrong):.1f}%, target 0%)",
            f"  correct submissions with a diagnosis: {self.correct_diagnosed}/"
            f"{len(self.correct)} (target 0)",
            f"  failing cases of wrong submissions with a diagnosis: {self.diagnosed_cases}/"
            f"{self.failing_cases}",
        ]
        rows = [(p, w, g, self._right(w, g) and not self._wrong(w, g)) for p, w, g in self.wrong]
        if verbose or not all(ok for *_, ok in rows):
            lines += ["", "per submission:" if verbose else "not as expected:"]
            for p, w, g, ok in rows:
                if verbose or not ok:
                    lines.append(f"  {'ok  ' if ok else 'MISS'} {p}: expected "
                                 f"{w or '(no # diagnosis: header)'}, named "
                                 f"{', '.join(sorted(g)) or 'nothing'}")
            for p, g in self.correct:
                if g or verbose:
                    lines.append(f"  {'ok  ' if not g else 'MISS'} {p}: correct, named "
                                 f"{', '.join(sorted(g)) or 'nothing'}")
        return "\n".join(lines)


def evaluate(corpus: Path, grade: Callable[[Path], Any]) -> Evaluation:
    """Grade `corpus/wrong/*.py` and `corpus/correct/*.py`; compare with `# diagnosis:`."""
    corpus = Path(corpus)
    ev = Evaluation()
    for path in sorted((corpus / "wrong").glob("*.py")):
        want = read_header(path).get("diagnosis") or None
        result = grade(path)
        ev.wrong.append((path.name, want, sorted(diagnoses(result))))
        for q in result.questions.values():
            for c in q.cases:
                if c.status not in ("passed", "not_attempted"):
                    ev.failing_cases += 1
                    ev.diagnosed_cases += bool(c.diagnosis)
    for path in sorted((corpus / "correct").glob("*.py")):
        ev.correct.append((path.name, sorted(diagnoses(grade(path)))))
    ev.variant_errors = dict(_Runner.errors)
    return ev
