"""The similarity report's second signal, beside code: students whose hidden cases fail with
the same wrong output that few others in the class give.

A common mistake (no scaling, no max subtraction) gives many students the same wrong values;
the same wrong values on a hidden case held by two or three students of a large class are
rarer, and worth a look beside their code. It is for the instructor's eyes only: it changes no
score, and it names students and cases, never a value (each case's wrong output is kept as a
digest, `memo/answer_digest.py`, and the expected values never enter it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

RARE_FRACTION = 0.02   # "few": at most this share of the class (and at least two students)


@dataclass
class SharedWrongOutput:
    question: str
    case: str
    students: list[str]


@dataclass
class StudentPair:
    a: str
    b: str
    cases: list[SharedWrongOutput] = field(default_factory=list)


def rare_limit(graded: int) -> int:
    """How many students may share a wrong output for it to count as rare."""
    return max(2, math.ceil(RARE_FRACTION * graded))


def shared_wrong_outputs(results) -> tuple[list[SharedWrongOutput], list[StudentPair], int]:
    """(the rare shared wrong outputs, the pairs of students sharing any, most first, and the
    limit used) among graded results (`SubmissionResult`s with `student` set)."""
    held: dict[tuple[str, str, str], list[str]] = {}
    graded = 0
    for r in results:
        if r.missing or not r.questions:
            continue
        graded += 1
        who = r.student or r.path
        for qid, q in r.questions.items():
            for c in q.cases:
                if c.hidden and c.output_digest:
                    held.setdefault((qid, c.name, c.output_digest), []).append(who)
    limit = rare_limit(graded)
    groups = [SharedWrongOutput(qid, case, sorted(set(who)))
              for (qid, case, _), who in sorted(held.items())
              if 2 <= len(set(who)) <= limit]
    pairs: dict[tuple[str, str], StudentPair] = {}
    for g in groups:
        for i, a in enumerate(g.students):
            for b in g.students[i + 1:]:
                pairs.setdefault((a, b), StudentPair(a, b)).cases.append(g)
    ordered = sorted(pairs.values(), key=lambda p: (-len(p.cases), p.a, p.b))
    return groups, ordered, limit
