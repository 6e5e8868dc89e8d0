"""Which submissions of a class share code: winnowed fingerprints, as MOSS computes them.

For each submission (read as `autograder grade` reads it, nothing run, no link followed):

1. its code becomes normalised token units (`code_tokens`: names, comments, docstrings,
   formatting and the order of functions no longer matter);
2. every run of K consecutive tokens inside a unit (a k-gram) is hashed, and winnowing keeps
   the smallest hash of every WINDOW consecutive ones: any stretch of at least
   K + WINDOW - 1 tokens that two submissions share yields at least one fingerprint both hold;
3. every k-gram of the student template (the `.py` and its notebook) is the *base*: those
   fingerprints are dropped from every submission, as MOSS does with its base file.

An inverted index maps each fingerprint to the submissions holding it (the columns of a sparse
matrix), so only pairs that share a fingerprint are ever looked at, and all of them at once in
one sparse product: a class of 1,000 takes seconds, not the half million comparisons of all
pairs. A fingerprint held by `df` of the class's `n` submissions weighs

    w = log((n + 1) / df) / log((n + 1) / 2), clipped to [0, 1],

1 when only the pair holds it, near 0 when nearly everyone does (the three-line softmax the
whole class writes). A pair's score is

    score = 2 * (sum of w over the fingerprints both hold) / (|fingerprints of a| + |of b|),

in [0, 1]: 1 for two submissions whose every fingerprint is theirs alone; code that many
students share, or only one of the two has, pulls it towards 0. It is a ranking of what to
read first, not a verdict (docs/similarity.md).

Beside the ranking, three things a first reader needs (`copies`, `baseline`, `clusters`):

* copies: two submissions whose code is the same after normalising (the same units, names,
  literals, layout and order of functions set aside; the template's units left out) are named
  as such, "identical" when their text is the same too, and listed first whatever the class
  shares (a copy of code the whole class writes alike would otherwise score low);
* the baseline: each pair's score is placed in the class's own distribution of pair scores (all
  n(n-1)/2 pairs, those sharing nothing at 0): its percentile, and whether it stands out, above
  Tukey's far-out fence (the third quartile plus three interquartile ranges);
* clusters: submissions linked by copies or by pairs that stand out, grouped.

Each pair also says what share of each file's own code (its lines outside the template) the
pair shares, as MOSS reports a percentage per file.

A library was considered: copydetect does winnowing over pygments tokens, but compares every
pair of files and has neither a per-function split nor weighting by how much of the class
shares a fingerprint; this module is small and uses only numpy and scipy, already required.
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .classlist import Student, discover, display
from ..intake.submissions import read_submission
from ..intake.student_files import UnreadableSubmission
from .code_tokens import Unit, notebook_units, units

K = 12        # tokens per k-gram: about one line of code
WINDOW = 8    # winnowing window: shared stretches of K + WINDOW - 1 = 19 tokens always show
_BASE_PRIME = np.uint64(0x100000001B3)   # the multiplier of the k-gram's polynomial hash


@dataclass
class Source:
    """One readable submission and its fingerprints."""
    student: str
    path: str                         # as the instructor named it, printable
    text: str                         # the Python code (a notebook's code cells, joined)
    cells: list[tuple[int, int]] = field(default_factory=list)  # notebook: (cell, first line)
    hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    lines: np.ndarray = field(default_factory=lambda: np.zeros((0, K), np.int32))
    # lines[i] are the source lines of the K tokens of the fingerprint hashes[i]
    positions: dict[int, list[int]] | None = None
    normal: tuple[str, ...] = ()       # its units' normalised tokens, sorted, template's left out
    normal_tokens: int = 0
    raw: str = ""                      # the text, line endings and trailing spaces aside


@dataclass
class Skipped:
    student: str
    path: str
    why: str


@dataclass
class Pair:
    a: Source
    b: Source
    score: float
    shared: int                                   # fingerprints both hold
    shared_lines: list[tuple[int, int]]           # (line in a, line in b), sorted
    weight_a: dict[int, float] = field(default_factory=dict)   # line: its strongest weight
    weight_b: dict[int, float] = field(default_factory=dict)
    kind: str = ""            # COPY_IDENTICAL, COPY_NORMALISED, or "" (ranked by score)
    percentile: float = 0.0   # the share of the class's pairs scoring below this one
    stands_out: bool = False  # above the class's far-out fence (see `baseline`)
    cluster: int = 0          # its cluster's number (0: in none)

    @property
    def share_a(self) -> float:
        """The share of a's own code lines (outside the template) that the pair shares."""
        return _share({la for la, _ in self.shared_lines}, self.a)

    @property
    def share_b(self) -> float:
        return _share({lb for _, lb in self.shared_lines}, self.b)

    @property
    def rare_share_a(self) -> float:
        """The share of a's own code lines shared through code few others in the class have
        (a fingerprint weighing at least RARE: MOSS likewise ignores passages many files hold)."""
        return _share({la for la, w in self.weight_a.items() if w >= RARE}, self.a)

    @property
    def rare_share_b(self) -> float:
        return _share({lb for lb, w in self.weight_b.items() if w >= RARE}, self.b)


COPY_IDENTICAL = "identical"
COPY_NORMALISED = "identical after normalisation"
MIN_COPY_TOKENS = 60      # a copy is named only with this much code of its own (a few lines)
RARE = 0.5                # a fingerprint's weight from which few others in the class hold it


def _share(lines: set[int], source: Source) -> float:
    own = set(source.lines.ravel().tolist()) if len(source.lines) else set()
    return len(lines & own) / len(own) if own else 0.0


@dataclass
class Baseline:
    """The class's own distribution of pair scores (every pair; those sharing nothing at 0)."""
    pairs: int
    median: float
    p90: float
    q1: float
    q3: float
    # Tukey's far-out fence, on the scores' own scale (at most 1, two identical files); None
    # when no pair can stand out: too few pairs to tell, or scores spread so widely that the
    # fence would lie above 1 (`no_stand_out` says which).
    fence: float | None
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))   # sorted, all pairs
    no_stand_out: str | None = None    # TOO_FEW_PAIRS, SPREAD_TOO_WIDE or None

    def percentile(self, score: float) -> float:
        return float(np.searchsorted(self.scores, score, side="left")) / max(1, self.pairs)


MIN_PAIRS_FOR_FENCE = 10
MAX_PAIR_SCORE = 1.0                 # the score of two identical files
TOO_FEW_PAIRS = "too few pairs"
SPREAD_TOO_WIDE = "scores spread too widely"


@dataclass
class Comparison:
    sources: list[Source]
    skipped: list[Skipped]
    pairs: list[Pair]                 # copies first, then the highest score first
    candidates: int                   # pairs sharing at least one fingerprint
    min_score: float = 0.0            # the floor of `pairs` (copies are listed whatever it is)
    baseline: Baseline | None = None
    clusters: list[list[str]] = field(default_factory=list)   # students, by cluster number - 1


# ------------------------------------------------------------------ fingerprints

_token_ids: dict[str, int] = {}


def _token_id(text: str) -> int:
    """A stable 64-bit id per token: the same code gives the same hashes in every run (Python's
    own str hash is salted per process)."""
    found = _token_ids.get(text)
    if found is None:
        found = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        _token_ids[text] = found
    return found


def kgram_hashes(unit: Unit, k: int = K) -> np.ndarray:
    """The polynomial hash of every k consecutive tokens of a unit (uint64, wrapping)."""
    n = len(unit.tokens) - k + 1
    if n <= 0:
        return np.zeros(0, np.uint64)
    ids = np.fromiter((_token_id(t) for t in unit.tokens), np.uint64, len(unit.tokens))
    powers = np.array([pow(int(_BASE_PRIME), k - 1 - j, 1 << 64) for j in range(k)], np.uint64)
    windows = np.lib.stride_tricks.sliding_window_view(ids, k)
    with np.errstate(over="ignore"):
        return (windows * powers).sum(axis=1, dtype=np.uint64)


def winnow(hashes: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Positions winnowing keeps: the smallest hash of every `window` consecutive ones (the
    rightmost on ties), each position once."""
    if len(hashes) == 0:
        return np.zeros(0, np.intp)
    if len(hashes) <= window:
        return np.array([len(hashes) - 1 - int(np.argmin(hashes[::-1]))])
    windows = np.lib.stride_tricks.sliding_window_view(hashes, window)
    rightmost = window - 1 - np.argmin(windows[:, ::-1], axis=1)
    return np.unique(rightmost + np.arange(len(windows)))


def fingerprint(found: list[Unit], base: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """(hashes, lines) of the winnowed fingerprints of `found` that are not in the base."""
    hashes, lines = [], []
    for unit in found:
        h = kgram_hashes(unit)
        if not len(h):
            continue
        keep = winnow(h)
        unit_lines = np.asarray(unit.lines, np.int32)
        for pos in keep:
            value = int(h[pos])
            if value not in base:
                hashes.append(value)
                lines.append(unit_lines[pos:pos + K])
    if not hashes:
        return np.zeros(0, np.uint64), np.zeros((0, K), np.int32)
    return np.array(hashes, np.uint64), np.stack(lines)


def source_units(text: str, cells: list[str] | None) -> list[Unit]:
    return notebook_units(cells) if cells is not None else units(text)


def _template_units(template_files: list[Path]) -> list[Unit]:
    """The units of every template file that can be read."""
    found: list[Unit] = []
    for path in template_files:
        try:
            sub = read_submission(path)
        except UnreadableSubmission:
            continue
        cells = [c.source for c in sub.cells] if sub.cells is not None else None
        found += source_units(sub.source, cells)
    return found


def base_hashes(template_files: list[Path]) -> set[int]:
    """Every k-gram (not only the winnowed ones) of the template files that can be read: what
    every student starts from never counts."""
    return {int(h) for unit in _template_units(template_files) for h in kgram_hashes(unit)}


def base_units(template_files: list[Path]) -> set[str]:
    """The template's units as normalised token text: a stub left as handed out is nobody's
    code, in a copy or anywhere else."""
    return {" ".join(u.tokens) for u in _template_units(template_files)}


def template_files(assignment) -> list[Path]:
    """The student template and, when there is one, its notebook (same stem, next to it)."""
    template = Path(assignment.template)
    notebook = template.with_suffix(".ipynb")
    return [template] + ([notebook] if notebook.is_file() else [])


# ------------------------------------------------------------------ the class

def read_sources(students: list[Student], base: set[int],
                 shown: dict[int, str] | None = None,
                 template_units: set[str] = frozenset()) -> tuple[list[Source], list[Skipped]]:
    """Read and fingerprint each student's file; `shown` (index: path) names a file
    differently from where it was read (grading from a due-date checkout)."""
    sources, skipped, seen = [], [], set()
    for i, s in enumerate(students):
        path = (shown or {}).get(i) or (display(str(s.file)) if s.file else "")
        if s.file is None:
            skipped.append(Skipped(s.name, path, s.problem or "nothing to compare"))
            continue
        key = os.path.normpath(os.path.abspath(s.file))
        if key in seen:          # the same file named twice on the command line
            continue
        seen.add(key)
        try:
            sub = read_submission(Path(s.file))
        except UnreadableSubmission as e:
            skipped.append(Skipped(s.name, path, str(e)))
            continue
        cells, starts, line = None, [], 1
        if sub.cells is not None:
            cells = [c.source for c in sub.cells]
            for c in sub.cells:
                starts.append((c.number, line))
                line += len(c.source.split("\n"))
        src = Source(s.name, path, sub.source, starts)
        found = source_units(sub.source, cells)
        src.hashes, src.lines = fingerprint(found, base)
        own = [" ".join(u.tokens) for u in found if " ".join(u.tokens) not in template_units]
        src.normal, src.normal_tokens = tuple(sorted(own)), sum(u.count(" ") + 1 for u in own)
        src.raw = "\n".join(line.rstrip() for line in sub.source.replace("\r\n", "\n")
                            .strip().split("\n"))
        sources.append(src)
    return sources, skipped


def weights(df: np.ndarray, n: int) -> np.ndarray:
    """How much a fingerprint held by `df` of `n` submissions says (1: only a pair holds it)."""
    if n <= 2:
        return np.ones(len(df))
    w = np.log((n + 1) / df) / math.log((n + 1) / 2)
    return np.clip(w, 0.0, 1.0)


def copies(sources: list[Source]) -> dict[tuple[int, int], str]:
    """{(i, j): COPY_IDENTICAL or COPY_NORMALISED} for the pairs of sources (i < j) whose code
    is the same after normalisation, with at least MIN_COPY_TOKENS tokens of their own."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, s in enumerate(sources):
        if s.normal_tokens >= MIN_COPY_TOKENS:
            groups.setdefault(s.normal, []).append(i)
    found = {}
    for members in groups.values():
        for x, i in enumerate(members):
            for j in members[x + 1:]:
                same = sources[i].raw == sources[j].raw
                found[(i, j)] = COPY_IDENTICAL if same else COPY_NORMALISED
    return found


def baseline(scores: np.ndarray, n: int) -> Baseline:
    """The distribution of the class's pair scores: `scores` of the pairs sharing something,
    the rest of the n(n-1)/2 pairs at 0."""
    total = n * (n - 1) // 2
    every = np.sort(np.concatenate([np.zeros(max(0, total - len(scores))),
                                    np.asarray(scores, np.float64)]))
    if not len(every):
        return Baseline(0, 0.0, 0.0, 0.0, 0.0, None, no_stand_out=TOO_FEW_PAIRS)
    q1, median, q3, p90 = (float(np.quantile(every, q)) for q in (0.25, 0.5, 0.75, 0.9))
    if total < MIN_PAIRS_FOR_FENCE:
        return Baseline(total, median, p90, q1, q3, None, every, TOO_FEW_PAIRS)
    fence = q3 + 3 * (q3 - q1)
    if fence >= MAX_PAIR_SCORE:
        # No score can lie above it: the page says so rather than state a fence beyond 1.
        return Baseline(total, median, p90, q1, q3, None, every, SPREAD_TOO_WIDE)
    return Baseline(total, median, p90, q1, q3, fence, every)


def clusters(pairs: list[Pair]) -> list[list[str]]:
    """Groups of students linked by copies or by pairs that stand out (largest first); each
    such pair gets its group's number."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    linked = [p for p in pairs if p.kind or p.stands_out]
    for p in linked:
        parent[root(id(p.a))] = root(id(p.b))
    groups: dict[int, list[Source]] = {}
    for p in linked:
        for s in (p.a, p.b):
            members = groups.setdefault(root(id(s)), [])
            if all(m is not s for m in members):
                members.append(s)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0].path))
    number = {key: i for i, (key, _) in enumerate(ordered, 1)}
    for p in linked:
        p.cluster = number[root(id(p.a))]
    return [[s.student for s in members] for _, members in ordered]


def rank(sources: list[Source], *, min_score: float = 0.0,
         max_pairs: int | None = None) -> tuple[list[Pair], int, Baseline]:
    """The pairs scoring at least `min_score` (above 0), and every copy (`copies`) whatever
    its score: copies first, then highest score first, at most `max_pairs`; how many pairs
    share any fingerprint; and the class's distribution of scores."""
    from scipy import sparse

    n = len(sources)
    sets = [np.unique(s.hashes) for s in sources]
    sizes = np.array([len(s) for s in sets], np.float64)
    copied = copies(sources)
    if n < 2 or not sizes.any():
        return [], 0, baseline(np.zeros(0), n)
    every = np.concatenate(sets)
    owner = np.repeat(np.arange(n), [len(s) for s in sets])
    keys, column = np.unique(every, return_inverse=True)
    # The inverted index: column j of `index` lists the submissions holding fingerprint j.
    index = sparse.csc_matrix((np.ones(len(every)), (owner, column)), shape=(n, len(keys)))
    df = np.diff(index.indptr)
    w = weights(df.astype(np.float64), n)
    shared_by_pair = df >= 2          # a fingerprint only one submission holds pairs no one
    postings = index[:, shared_by_pair]
    weight = dict(zip(keys[shared_by_pair].tolist(), w[shared_by_pair].tolist()))
    # Summing, over the fingerprints that two submissions share, their weights: each
    # fingerprint's posting list meets itself (a product over the index, nothing else).
    together = sparse.triu(postings @ sparse.diags(w[shared_by_pair]) @ postings.T, k=1).tocoo()
    scores = 2 * together.data / (sizes[together.row] + sizes[together.col])
    spread = baseline(scores, n)
    kinds = [copied.get((int(r), int(c)), "") for r, c in zip(together.row, together.col)]
    chosen = [i for i in range(len(scores)) if kinds[i] or (scores[i] >= min_score
                                                            and scores[i] > 0)]
    order = {COPY_IDENTICAL: 0, COPY_NORMALISED: 1, "": 2}
    chosen = sorted(chosen, key=lambda i: (order[kinds[i]], -scores[i],
                                           sources[together.row[i]].path,
                                           sources[together.col[i]].path))
    if max_pairs is not None:
        chosen = chosen[:max_pairs]
    pairs = [_pair(sources[together.row[i]], sources[together.col[i]], float(scores[i]),
                   weight) for i in chosen]
    for i, p in zip(chosen, pairs):
        p.kind = kinds[i]
        p.percentile = spread.percentile(p.score)
        p.stands_out = spread.fence is not None and p.score > spread.fence
    # A copy whose every fingerprint the template holds shares none: still named, first.
    scored = set(zip(together.row.tolist(), together.col.tolist()))
    unscored = [Pair(sources[i], sources[j], 0.0, 0, [], kind=kind)
                for (i, j), kind in sorted(copied.items()) if (i, j) not in scored]
    return unscored + pairs, len(together.data), spread


def _positions(source: Source) -> dict[int, list[int]]:
    """{hash: indices of its fingerprints in `source`}, made once per source."""
    if source.positions is None:
        source.positions = {}
        for i, h in enumerate(source.hashes.tolist()):
            source.positions.setdefault(h, []).append(i)
    return source.positions


def _pair(a: Source, b: Source, score: float, weight: dict[int, float]) -> Pair:
    """The lines behind a pair's score: each shared fingerprint's K tokens, line for line."""
    where_b = _positions(b)
    lines_a, lines_b = a.lines.tolist(), b.lines.tolist()
    lines: set[tuple[int, int]] = set()
    weight_a: dict[int, float] = {}
    weight_b: dict[int, float] = {}
    seen: dict[int, int] = {}     # occurrences of each shared hash in a, so far
    for i, h in enumerate(a.hashes.tolist()):
        js = where_b.get(h)
        if not js:
            continue
        # The n-th occurrence in a goes with the n-th in b (or b's last): a repeated stretch
        # lines up in order.
        j = js[min(seen.get(h, 0), len(js) - 1)]
        seen[h] = seen.get(h, 0) + 1
        w = weight.get(h, 1.0)
        for la, lb in zip(lines_a[i], lines_b[j]):
            lines.add((la, lb))
            weight_a[la] = max(weight_a.get(la, 0.0), w)
            weight_b[lb] = max(weight_b.get(lb, 0.0), w)
    return Pair(a, b, round(score, 4), len(seen), sorted(lines), weight_a, weight_b)


def compare_students(students: list[Student], template: list[Path], *, min_score: float = 0.0,
                     max_pairs: int | None = None,
                     shown: dict[int, str] | None = None) -> Comparison:
    base = base_hashes(template)
    sources, skipped = read_sources(students, base, shown, base_units(template))
    pairs, candidates, spread = rank(sources, min_score=min_score, max_pairs=max_pairs)
    groups = clusters(pairs)
    return Comparison(sources, skipped, pairs, candidates, min_score, spread, groups)


def compare_paths(assignment, paths: list[str], **options) -> Comparison:
    """Compare the submissions found under `paths` as `autograder grade` finds them."""
    return compare_students(discover(paths, assignment.student_file), template_files(assignment),
                            **options)
