"""Identical and near-identical answers to one question, grouped so that one decision grades a
group; suggestions from the closest answer already graded.

Answers are compared after normalising (case, blank space, punctuation at the ends): equal
ones share a group, and a group joins an earlier one whose first answer it matches at
NEAR_IDENTICAL or more by rapidfuzz's `fuzz.ratio` (an edit-distance similarity, 0 to 100).
An answer a grader split off stays alone. Groups come in a stable pseudo-random order (a salted
hash of each student's name, fixed for the database), so no grader reads the class
alphabetically and every grader sees the same order.

A group not graded yet is offered the decision of the graded answer that says the same thing:
their words, each answer's sorted, compared by edit distance (rapidfuzz's
`fuzz.token_sort_ratio`) at SUGGEST_FROM or more. The measure holds both ways: words the
other answer lacks cost as much as words this one lacks, so an answer made of the prompt's
words and many more (a "word salad", which contains any short answer's words) is not offered a
graded answer's decision, while a reordered or reworded answer of the same length is. Word-set
containment (`token_set_ratio`), which a long answer always wins, is not used for this.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from .store import Answer, Grade

NEAR_IDENTICAL = 90      # fuzz.ratio at or above which two answers share a group
SUGGEST_FROM = 70        # fuzz.token_sort_ratio at or above which a graded answer is suggested
MIN_NEAR_CHARS = 20      # shorter answers group only when equal ("no" and "on" are not alike)
_SPACE = re.compile(r"\s+")
_ENDS = re.compile(r"^[\W_]+|[\W_]+$")


def normalise(text: str) -> str:
    return _ENDS.sub("", _SPACE.sub(" ", text.casefold())).strip()


def order_key(salt: str, question: str, student: str) -> str:
    return hashlib.sha256(f"{salt}\0{question}\0{student}".encode()).hexdigest()


@dataclass
class Member:
    student: str
    alias: str              # how the page names the student while names are hidden
    text: str
    digest: str
    grade: Grade | None
    similarity: int = 100   # to the group's first answer

    @property
    def status(self) -> str:
        if self.grade is not None:
            return "graded" if self.grade.answer_digest == self.digest else "regrade"
        return "pending" if self.text else "unanswered"


@dataclass
class Group:
    key: str
    members: list[Member] = field(default_factory=list)
    split: bool = False

    @property
    def status(self) -> str:
        states = {m.status for m in self.members}
        if "regrade" in states:
            return "regrade"
        if states <= {"graded"}:
            decisions = {_decision_key(m.grade) for m in self.members}
            return "graded" if len(decisions) == 1 else "mixed"
        if "graded" in states:
            return "mixed"
        return "unanswered" if states == {"unanswered"} else "pending"


def _decision_key(g: Grade | None):
    return None if g is None else (tuple(sorted(g.items)), round(g.adjust, 6), g.comment)


def group_answers(question: str, answers: list[Answer], grades: dict[tuple[str, str], Grade],
                  splits: set[str], salt: str) -> list[Group]:
    """The groups of one question's answers, in the stable pseudo-random order."""
    ordered = sorted(answers, key=lambda a: order_key(salt, question, a.student))
    aliases = {a.student: f"#{n}" for n, a in enumerate(ordered, 1)}
    groups: list[Group] = []
    by_text: dict[str, Group] = {}
    leaders: list[str] = []          # normalised first answer of each joinable group
    leader_groups: list[Group] = []
    for a in ordered:
        member = Member(a.student, aliases[a.student], a.text, a.digest,
                        grades.get((a.student, question)))
        if a.student in splits:
            groups.append(Group(f"{question}:{a.student}", [member], split=True))
            continue
        norm = normalise(a.text)
        if norm in by_text:
            by_text[norm].members.append(member)
            continue
        group = None
        if len(norm) >= MIN_NEAR_CHARS and leaders:
            best = process.extractOne(norm, leaders, scorer=fuzz.ratio,
                                      score_cutoff=NEAR_IDENTICAL)
            if best is not None:
                group = leader_groups[best[2]]
                member.similarity = int(best[1])
        if group is None:
            group = Group(f"{question}:{a.student}")
            groups.append(group)
            if len(norm) >= MIN_NEAR_CHARS:
                leaders.append(norm)
                leader_groups.append(group)
        group.members.append(member)
        by_text[norm] = group
    # The empty answers (scored 0 unless a grader decides otherwise) come last.
    return sorted(groups, key=lambda g: g.status == "unanswered")


def suggestion(group: Group, groups: list[Group]) -> dict | None:
    """The decision of the graded answer closest to the group's first answer, when the two
    say the same thing (see the module's note): {"items", "adjust", "comment", "from" (alias),
    "similarity"}."""
    first = group.members[0]
    if not first.text:
        return None
    graded = [m for g in groups if g is not group for m in g.members
              if m.status == "graded" and m.text]
    if not graded:
        return None
    best = process.extractOne(normalise(first.text), [normalise(m.text) for m in graded],
                              scorer=fuzz.token_sort_ratio, score_cutoff=SUGGEST_FROM)
    if best is None:
        return None
    source = graded[best[2]]
    return {**source.grade.decision(), "from": source.alias, "similarity": int(best[1])}
