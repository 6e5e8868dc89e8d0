"""The fixed cost a scan may take. Submissions may be up to 2 MiB, and the scan runs in the
trusted grading process, so a hostile file must not be able to stall it. A source over the
budget is not skipped silently (padding a file would then hide tampering): the scan stops and
says so (`ScanResult.cut_short`), and the row is flagged for review without losing points."""
from __future__ import annotations

import time

# Far above any honest exercise file (a few thousand nodes, tens of KiB: the largest file of
# the corpora is 14 KiB), far below the 2 MiB a submission may have. Parsing is the one step
# that cannot be interrupted (about 1 to 2 s of CPU per MiB of dense code), so the source's
# length is checked before it: 256 KiB parse in a few tenths of a second.
MAX_SOURCE_CHARS = 256 * 1024
MAX_NODES = 100_000                 # syntax nodes in the module (all cells of a notebook)
# Units of work in all (nodes, folds, lookups, call sites): honest files take under 3 per node.
MAX_STEPS = 10 * MAX_NODES
# CPU time of parsing and analysing, from the first call: a backstop behind the counted limits
# (nodes, steps, folded characters), which bound the work on any machine.
MAX_CPU_SECONDS = 2.0
MAX_SNIPPET_CHARS = 100_000         # one constant string run by exec()/eval()
# Characters produced by constant folding over the whole scan: each folded value is at most
# `folding.MAX_FOLDED_CHARS`, and honest files fold a few hundred characters of names.
MAX_FOLDED_TOTAL = 2_000_000
# Steps between two looks at the clock. Every step is bounded work (a node, a fold of at most
# `folding.MAX_FOLDED_CHARS` characters, a name lookup), so the clock is never far behind; a
# look costs about a microsecond, a step a few.
CHECK_EVERY = 64


class ScanCutShort(Exception):
    """The source is over the budget; the message says which limit, in words for the report."""


class Budget:
    """Counts the syntax nodes the scan visits and the CPU time it has taken."""

    def __init__(self, max_nodes: int | None = None, cpu_seconds: float | None = None):
        self.max_nodes = MAX_NODES if max_nodes is None else max_nodes
        self.cpu_seconds = MAX_CPU_SECONDS if cpu_seconds is None else cpu_seconds
        self.start = time.process_time()
        self.nodes = 0
        self.steps = 0
        self.folded_chars = 0

    @staticmethod
    def check_size(chars: int) -> None:
        """Before parsing: the whole source's length."""
        if chars > MAX_SOURCE_CHARS:
            raise ScanCutShort(f"{chars // 1024} KiB of source, over the "
                               f"{MAX_SOURCE_CHARS // 1024} KiB the scan reads")

    def node(self) -> None:
        """One more node in the source model."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise ScanCutShort(f"more than {self.max_nodes:,} syntax nodes")
        self.step()

    def step(self) -> None:
        """One more unit of work; every CHECK_EVERY of them, a look at the clock."""
        self.steps += 1
        if self.steps % CHECK_EVERY == 0:
            if self.steps > MAX_STEPS:
                raise ScanCutShort(f"more than {MAX_STEPS:,} steps of analysis")
            self.check_time()

    def folded(self, chars: int) -> None:
        """Constant folding produced `chars` more characters."""
        self.folded_chars += chars
        if self.folded_chars > MAX_FOLDED_TOTAL:
            raise ScanCutShort(f"more than {MAX_FOLDED_TOTAL:,} characters of constant strings "
                               "built by the source")

    def check_time(self) -> None:
        if time.process_time() - self.start > self.cpu_seconds:
            raise ScanCutShort(f"more than {self.cpu_seconds:g} s of CPU time to analyse")
