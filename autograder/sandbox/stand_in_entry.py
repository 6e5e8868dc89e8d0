"""The function diagnosis adds to a student's module to run one of their functions again with
correct helpers standing in for theirs (`autograder.diagnose.stand_ins`). It lives with the
sandbox because the worker adds it itself (`add_entry`), to the module it graded, once grading
is over; a worker of the diagnosis's own imports a copy of the file with it appended instead.
Either way it has the same lines, so a traceback through it reads the same."""
from __future__ import annotations

import linecache
import types

# The function added to the student's module (or to a copy of their file). Its names are
# positional-only, so that no keyword of the student's call can clash with them; it holds
# nothing of the engine.
ENTRY = "__autograder_with_stand_ins__"
SOURCE = f'''

def {ENTRY}(_function, _replaced, _results, /, *args, **kwargs):
    """Added by the grader once your grade is made, for feedback only: calls `_function` with
    each function named in `_replaced` standing in for yours; a stand-in records what it was
    given and returns the next of `_results` (what a correct helper returns there)."""
    g = globals()
    calls = []

    class Pending(BaseException):
        pass

    def stand_in(name):
        def call(*a, **k):
            calls.append((name, a, k))
            if len(calls) > len(_results):
                raise Pending()
            return _results[len(calls) - 1]
        return call

    saved = {{n: g.get(n) for n in _replaced}}
    for n in _replaced:
        g[n] = stand_in(n)
    try:
        try:
            return ("ok", g[_function](*args, **kwargs), calls)
        except Pending:
            return ("pending", None, calls)
    finally:
        g.update(saved)
'''



def entry_cell(cells: list) -> int:
    """The number of the cell that holds the entry in a notebook: the one after the last."""
    return max((int(n) for n, _ in cells), default=0) + 1


def add_entry(module: types.ModuleType, filename: str, source: str | None,
              cells: list | None) -> None:
    """Define the entry in `module`, as if `SOURCE` ended the file the module was made from:
    on the lines after its last (a script), or as a cell after its last (a notebook)."""
    if cells is not None:
        where = f"cell {entry_cell(cells)} of {filename}"
        text, shown = SOURCE, SOURCE
    else:
        where = filename
        source = source or ""
        text, shown = "\n" * source.count("\n") + SOURCE, source + SOURCE
    linecache.cache[where] = (len(shown), None, shown.splitlines(True), where)
    exec(compile(text, where, "exec", dont_inherit=True), module.__dict__)
