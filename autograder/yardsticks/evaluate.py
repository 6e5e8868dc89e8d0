"""Measuring diagnosis on a corpus, for `autograder diagnose-eval` and the tests: grade
`wrong/` and `correct/` submissions and compare the mistakes named with each file's
`# diagnosis:` header.

A wrong submission counts as named right only when it loses points: one that keeps every
autograded point is a mistake no case catches (a missing case), whatever its header says. A
submission the grader itself failed on (an internal error) is a failure of the measurement,
never a figure: the evaluation does not meet its targets while there is one."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..diagnose.variants import VariantRunner
from ..model.results import diagnoses
from ..model.status import QuestionStatus


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


def internal_errors(result: Any) -> list[str]:
    """The questions of a result the grader itself could not run (["(the submission)"] when
    the whole row is one error); empty for a graded submission."""
    questions = getattr(result, "questions", {}) or {}
    failed = [qid for qid, q in questions.items() if q.status == QuestionStatus.INTERNAL_ERROR]
    if not questions and getattr(result, "error", None):
        failed.append("(the submission)")
    return failed


def loses_points(result: Any) -> bool:
    """Whether a result misses some autograded point."""
    return any(q.score < q.max_score for q in (getattr(result, "questions", {}) or {}).values())


@dataclass
class Evaluation:
    wrong: list[tuple[str, str | None, list[str]]] = field(default_factory=list)
    correct: list[tuple[str, list[str]]] = field(default_factory=list)
    variant_errors: dict[tuple[str, str], str] = field(default_factory=dict)
    failing_cases: int = 0          # failing cases of the wrong submissions (not attempted aside)
    diagnosed_cases: int = 0        # ... of which a mistake is named
    uncaught: set[str] = field(default_factory=set)     # wrong files with every point kept
    internal: list[str] = field(default_factory=list)   # "file: question" the grader failed on

    def _right(self, want: str | None, got: list[str], name: str = "") -> bool:
        if name in self.uncaught:
            return False        # no case catches it: nothing can be named right
        allowed = wanted(want)
        return not got if allowed == {NONE} else bool(allowed & set(got))

    @staticmethod
    def _wrong(want: str | None, got: list[str]) -> bool:
        return bool(set(got) - wanted(want))

    @property
    def named_right(self) -> int:
        return sum(1 for name, want, got in self.wrong if self._right(want, got, name))

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
                and self.named_wrong == 0 and self.correct_diagnosed == 0
                and not self.internal)

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
        if self.uncaught:
            lines.append(f"  wrong submissions that keep every point (no case catches them): "
                         f"{len(self.uncaught)} (target 0)")
        if self.internal:
            lines.append(f"  INTERNAL ERROR of the grader on {len(self.internal)} "
                         "question(s): the figures above are not a measurement")
            lines += [f"    {where}" for where in self.internal]
        rows = [(p, w, g, self._right(w, g, p) and not self._wrong(w, g))
                for p, w, g in self.wrong]
        if verbose or not all(ok for *_, ok in rows):
            lines += ["", "per submission:" if verbose else "not as expected:"]
            for p, w, g, ok in rows:
                if verbose or not ok:
                    caught = "" if p not in self.uncaught else " (keeps every point: no case " \
                                                                "catches it)"
                    lines.append(f"  {'ok  ' if ok else 'MISS'} {p}: expected "
                                 f"{w or '(no # diagnosis: header)'}, named "
                                 f"{', '.join(sorted(g)) or 'nothing'}{caught}")
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
        ev.internal += [f"{path.name}: {q}" for q in internal_errors(result)]
        if not loses_points(result):
            ev.uncaught.add(path.name)
        for q in result.questions.values():
            for c in q.cases:
                if c.status not in ("passed", "not_attempted"):
                    ev.failing_cases += 1
                    ev.diagnosed_cases += bool(c.diagnosis)
    for path in sorted((corpus / "correct").glob("*.py")):
        result = grade(path)
        ev.correct.append((path.name, sorted(diagnoses(result))))
        ev.internal += [f"{path.name}: {q}" for q in internal_errors(result)]
    ev.variant_errors = dict(VariantRunner.errors)
    return ev
