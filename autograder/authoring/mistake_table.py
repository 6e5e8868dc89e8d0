"""Recording the table of known mistakes' outcomes on the public cases
(`autograder.diagnose.table` says what it holds and how the student's check reads it), for
`autograder snapshot`, and telling a missing or stale one, for `autograder lint`.

What is recorded, per check of a public case (the reference standing in for the student, so
every check runs): the outcome of every alternative of every catalogued mistake (and declared
pair) that reaches the checked function, and of every combination of at most `MAX_PARTS`
mistakes that the search for several causes (`causes.search`) tries there: the function's own
mistakes together, or one with a mistake that a public case of a helper can name. Only the
outcome's output, gradients, changed inputs, forbidden calls and the error's type and message
are kept, never the error's file, line or code (they would quote the catalogue or the
reference).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import lzma
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model.assignment import Assignment
from ..diagnose.catalogue import Catalogue, Mistake, catalogue_for, catalogue_path
from ..diagnose.causes import MAX_BASES, MAX_OWN, merged_replacements, own_alternatives
from ..diagnose.portable import catalogue_data
from ..diagnose.sources import ReferenceVariants, variant_key
from ..diagnose.symptoms import distance
from ..diagnose.table import FORMAT, MAGIC
from ..sandbox.protocol import encode_outcome

# Beside the table, not shipped: the digest of what it was made from, and the mistakes no
# public case catches.
ABOUT_FILE = "mistake-outcomes.about"


def public_records(assignment: Assignment) -> list:
    """Every check the public cases make, with the reference as the student (so every check
    passes): their inputs, seeds and expected outcomes. One record per distinct call."""
    from ..checking.context import CheckContext, Mode, Recording
    from ..diagnose.session import Session
    from ..grading.runner import run_question

    ref = assignment.load_reference()
    env = {name: getattr(ref, name, None) for name in assignment.api}
    env.update({name: getattr(ref, name, None) for name in assignment.answers})
    session = Session(assignment)
    # Expected outcomes from the reference itself (as `autograder snapshot` records them), not
    # from the snapshot files, which may be rewritten in the same run.
    context = CheckContext(Mode.RECORD, session=session, recording=Recording())
    for q in assignment.questions:
        run_question(assignment, q.id, env, include_hidden=False, context=context)
    seen, out = set(), []
    for records in session.passed.values():
        for r in records:
            if r.key not in seen:
                seen.add(r.key)
                out.append(r)
    return out


# Combinations of a helper's mistake with more of the function's own than this makes are not
# recorded (the search may still find them in the instructor's grade: the student's check then
# names nothing there). A wrong helper and two mistakes of the function's own at once are rare,
# and they would make most of the table. The function's own mistakes alone are recorded as far
# as the search goes (`MAX_OWN`), so that a search that finds nothing ends as the grade's does.
MAX_PARTS = 2


def _helper_bases(catalogue: Catalogue, calls: dict, function: str,
                  named_on: dict[str, set[str]]) -> list[tuple]:
    """The ways the helpers' named mistakes can enter a combination on `function`, as the
    search takes them (`causes._helper_alternatives`): one named mistake (each of its
    alternatives) or one declared pair (its members together), among those that a public case
    of a helper can name (`named_on`: {function: mistake ids its public cases can name})."""
    helpers = calls.get(function, frozenset()) - {function}
    nameable = set().union(*(named_on.get(h, set()) for h in helpers)) if helpers else set()

    def alternatives(m: Mistake) -> list[tuple[Mistake, int]]:
        return [(m, i) for i, alt in enumerate(m.alternatives)
                if set(alt) & helpers and function not in alt]

    bases: list[tuple] = []
    for m in catalogue.mistakes.values():
        if m.alternatives and not m.combines and m.id in nameable:
            bases += [(a,) for a in alternatives(m)]
    for pair in catalogue.mistakes.values():
        if pair.combines and pair.id in nameable:
            groups = [alternatives(catalogue.mistakes[i]) for i in pair.combines
                      if i in catalogue.mistakes]
            if len(groups) == len(pair.combines) and all(groups):
                bases += list(itertools.islice(itertools.product(*groups), MAX_BASES))
    return bases


def covered_variants(catalogue: Catalogue, calls: dict, runner: Any, record: Any,
                     named_on: dict[str, set[str]] | None = None
                     ) -> dict[str, list[tuple[Mistake, int]]]:
    """{variant key: its parts} for the variants the table holds on this record's call: every
    single alternative, and with `named_on` the combinations of at most MAX_PARTS parts."""
    out: dict[str, list] = {}
    function = record.function
    reach = calls.get(function, frozenset({function}))

    def add(parts: list[tuple[Mistake, int]]) -> None:
        kept = [(m, i) for m, i in parts if set(m.alternatives[i]) & reach]
        key = variant_key(catalogue, calls, [(m.id, i) for m, i in kept], function)
        if key:
            out.setdefault(key, kept)

    for m in catalogue.mistakes.values():
        for i in range(len(m.alternatives)):
            add([(m, i)])
    if named_on is None:
        return out
    own = own_alternatives(runner, record)
    for base in [()] + _helper_bases(catalogue, calls, function, named_on):
        # The function's own mistakes alone, as many as the search takes; with a helper's
        # mistake, MAX_PARTS in all.
        most = MAX_OWN if not base else min(MAX_OWN, MAX_PARTS - len(base))
        for size in range(0, most + 1):
            if len(base) + size < 2:
                continue
            for extra in itertools.combinations(own, size):
                parts = list(base) + list(extra)
                ids = [m.id for m, _ in parts]
                if len(set(ids)) == len(ids) and merged_replacements(parts) is not None:
                    add(parts)
    return out


def _variant(catalogue: Catalogue, parts: list[tuple[Mistake, int]]) -> tuple[Mistake, int]:
    """A runnable variant for these parts: the catalogue's own for one, a merged one for more."""
    if len(parts) == 1:
        return parts[0]
    ordered = sorted((m.id, i) for m, i in parts)
    return Mistake("+".join(f"{mid}.{i}" for mid, i in ordered),
                   alternatives=[merged_replacements(parts)], parts=tuple(ordered)), 0


def _public_outcome(outcome: dict) -> dict:
    """What the table keeps of an outcome: all the engine compares, without the error's file,
    line and code (they would quote the catalogue or the reference)."""
    err = outcome.get("error")
    return {**outcome, "called": [], "unchecked": None,
            "error": None if err is None else {"type": err.get("type"),
                                               "message": err.get("message")}}


class _Writer:
    def __init__(self) -> None:
        self.buffers: list[bytes] = []
        self._buffer_ids: dict[bytes, int] = {}
        self.outcomes: list[dict] = []
        self._outcome_ids: dict[str, int] = {}

    def add(self, outcome: dict) -> int:
        local: list[bytes] = []
        node = encode_outcome(_public_outcome(outcome), local)
        refs = []
        for data in local:
            digest = hashlib.sha256(data).digest()
            if digest not in self._buffer_ids:
                self._buffer_ids[digest] = len(self.buffers)
                self.buffers.append(data)
            refs.append(self._buffer_ids[digest])
        item = {"node": node, "bufs": refs}
        text = json.dumps(item, sort_keys=True)
        if text not in self._outcome_ids:
            self._outcome_ids[text] = len(self.outcomes)
            self.outcomes.append(item)
        return self._outcome_ids[text]


@dataclass
class TableStats:
    records: int = 0
    variants: int = 0           # (record, variant) entries
    outcomes: int = 0           # distinct outcomes stored
    arrays: int = 0             # distinct arrays stored
    raw_bytes: int = 0
    file_bytes: int = 0
    by_function: dict = field(default_factory=dict)
    # Mistakes with a variant whose outcome on every public check is the reference's (to within
    # the tolerance): a student who makes one passes every public case.
    not_caught: list = field(default_factory=list)


def build_table(assignment: Assignment) -> tuple[bytes, TableStats]:
    """The table's file content for this assignment (its reference and catalogue needed)."""
    catalogue = catalogue_for(assignment)
    if catalogue is None:
        raise ValueError(f"{assignment.name} has no catalogue of known mistakes")
    from ..diagnose.variants import VariantRunner

    source = ReferenceVariants(assignment, catalogue)
    runner = VariantRunner(catalogue, source)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")     # variants overflow and divide by zero on purpose
        return _build(assignment, catalogue, source, runner)


def _build(assignment: Assignment, catalogue: Catalogue, source: ReferenceVariants,
           runner: Any) -> tuple[bytes, TableStats]:
    calls = source.calls
    writer = _Writer()
    stats = TableStats()
    records = public_records(assignment)
    outcomes: dict[tuple[bytes, str], list] = {}

    def record_all(record, variants: dict[str, list]) -> None:
        for key, parts in sorted(variants.items()):
            if (record.key, key) in outcomes:
                continue
            mistake, index = _variant(catalogue, parts)
            forward = source.compute(mistake, index, record, False)
            full = source.compute(mistake, index, record, True) \
                if forward is not None and record.want_grad else None
            outcomes[(record.key, key)] = [forward, full]

    # Single mistakes first: which of them a public case can name at all (its outcome there is
    # not the reference's) decides which helpers' mistakes the combinations start from.
    named_on: dict[str, set[str]] = {}
    for record in records:
        singles = covered_variants(catalogue, calls, runner, record)
        record_all(record, singles)
        for key, parts in singles.items():
            forward, full = outcomes[(record.key, key)]
            shown = full if full is not None else forward
            if shown is not None and distance(record.expected, shown, record.tolerance) > 1.0:
                named_on.setdefault(record.function, set()).add(parts[0][0].id)
    caught = set().union(*named_on.values()) if named_on else set()
    stats.not_caught = [m.id for m in catalogue.mistakes.values()
                        if m.alternatives and not m.combines and m.id not in caught]
    items = []
    for record in records:
        variants = covered_variants(catalogue, calls, runner, record, named_on)
        record_all(record, variants)
        kept = {}
        for key in sorted(variants):
            forward, full = outcomes[(record.key, key)]
            if forward is not None:
                kept[key] = [writer.add(forward), None if full is None else writer.add(full)]
        items.append({"question": record.question, "function": record.function,
                      "digest": record.key.hex(), "want_grad": record.want_grad,
                      "variants": kept})
        stats.variants += len(kept)
        stats.by_function[record.function] = \
            stats.by_function.get(record.function, 0) + len(kept)
    records = items
    header = {"format": FORMAT, "assignment": assignment.name,
              "catalogue": catalogue_data(catalogue),
              "calls": {f: sorted(c) for f, c in sorted(calls.items())},
              "records": records, "outcomes": writer.outcomes, "buffers": []}
    offset = 0
    for data in writer.buffers:
        header["buffers"].append([offset, len(data)])
        offset += len(data)
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    raw = MAGIC + struct.pack(">Q", len(head)) + head + b"".join(writer.buffers)
    content = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)
    stats.records, stats.outcomes = len(records), len(writer.outcomes)
    stats.arrays, stats.raw_bytes, stats.file_bytes = len(writer.buffers), len(raw), len(content)
    return content, stats


def inputs_digest(assignment: Assignment) -> str:
    """What the table is made from: this format, the reference, the catalogue and the question
    files (so a change to any of them makes it stale)."""
    h = hashlib.sha256(f"format {FORMAT} parts {MAX_PARTS}\n".encode())
    files = [assignment.reference_path, catalogue_path(assignment)]
    files += [q.test_file for q in assignment.questions]
    for f in files:
        h.update(f"{getattr(f, 'name', None)}\n".encode())
        if f is not None and Path(f).is_file():
            h.update(Path(f).read_bytes())
    return h.hexdigest()


def write_table(assignment: Assignment) -> tuple[bool, TableStats | None]:
    """Record the table (and its digest) of an assignment with a catalogue: (whether the file
    was written, its figures). A table whose inputs are unchanged is left as it is, so an
    unchanged assignment changes no file. (False, None) without a catalogue."""
    if catalogue_for(assignment) is None:
        return False, None
    if table_problem(assignment) is None:
        return False, None
    content, stats = build_table(assignment)
    assignment.mistake_table.write_bytes(content)
    about = {"made_from": inputs_digest(assignment), "not_caught": stats.not_caught}
    (assignment.snapshot_dir / ABOUT_FILE).write_text(json.dumps(about, indent=1) + "\n")
    return True, stats


def about(assignment: Assignment) -> dict | None:
    """What `autograder snapshot` noted beside the table (not shipped): the digest of what it
    was made from, and the catalogued mistakes that no public case catches."""
    try:
        return json.loads((assignment.snapshot_dir / ABOUT_FILE).read_text())
    except (OSError, ValueError):
        return None


def table_line(assignment: Assignment, written: bool, stats: TableStats | None) -> str:
    """What `autograder snapshot` says about the table ("" for an assignment without one)."""
    from ..model.safetext import shown_path

    path = assignment.mistake_table
    if not written:
        return f"unchanged {shown_path(path)}" if path.is_file() else ""
    return (f"wrote {shown_path(path)} ({stats.variants} outcomes of known mistakes on "
            f"{stats.records} public checks, {stats.file_bytes / 1e6:.2f} MB)")


def table_problem(assignment: Assignment) -> str | None:
    """Why the assignment's table is missing or stale (for `autograder lint`), or None."""
    if catalogue_for(assignment) is None or assignment.reference_path is None:
        return None
    if not assignment.mistake_table.is_file():
        return f"snapshots/{assignment.mistake_table.name} is missing"
    if (about(assignment) or {}).get("made_from") != inputs_digest(assignment):
        return f"snapshots/{assignment.mistake_table.name} is stale (the reference, the catalogue or the public cases " \
               "changed since it was recorded)"
    return None


