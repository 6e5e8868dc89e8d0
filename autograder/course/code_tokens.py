"""Python source as normalised token streams, for comparing students' code.

What survives the usual disguises is what is left after Python's own `tokenize` has read the
code and everything a copier can change for free is dropped or made uniform:

* comments, blank lines, line breaks inside brackets and all spacing are gone (they are not
  tokens), and so are docstrings and other bare string statements, `pass` statements and
  trailing commas (what formatters add or remove);
* every name the student chose becomes `V`: variables, parameters, functions, imports. Names a
  renamer does not reach stay: keywords, builtins (`len`, `range`) and attribute names after a
  dot (`.transpose`, `.masked_fill`), which are the library's, not the student's;
* every number becomes `N` and every string `S` (eps `1e-9` or `1e-10`, a message reworded);
* `;` ends a statement like a line break does, and indentation is `{` / `}`, whatever its width.

Each top-level statement (a function with its decorators, a class, an import, a loop) is its
own *unit*: nothing is compared across two units, so reordering functions changes nothing.
A notebook's cells are tokenised one by one (as grading runs them), so a cell that does not
tokenise costs only that cell.

Nothing is executed. Tokenising is bounded: at most MAX_TOKENS tokens per submission, and a
stretch that does not tokenise is skipped line by line, at most MAX_RESTARTS times.
"""
from __future__ import annotations

import builtins
import io
import keyword
import token as tk
import tokenize
from dataclasses import dataclass, field

MAX_TOKENS = 100_000      # honest solutions have about a thousand
MAX_RESTARTS = 20         # stretches that do not tokenise, skipped before giving up

_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_"))
_CONTINUES = frozenset({"else", "elif", "except", "finally"})   # same statement, next clause
_CLOSING = frozenset({")", "]", "}"})
_SKIPPED = frozenset({tk.COMMENT, tk.NL, tk.ENCODING, tk.ENDMARKER})
# Python 3.12 splits f-strings into pieces; each f-string is one `S`, like any string.
_FSTRING_START = getattr(tk, "FSTRING_START", -1)
_FSTRING_END = getattr(tk, "FSTRING_END", -1)


@dataclass
class Unit:
    """One top-level statement's normalised tokens and the source line of each."""
    tokens: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def units(source: str, first_line: int = 1) -> list[Unit]:
    """The normalised units of one piece of Python source; line numbers start at `first_line`
    (a notebook cell's position in the joined code)."""
    return [u for u in _Normaliser(first_line - 1).run(source) if u.tokens]


def notebook_units(cells: list[str]) -> list[Unit]:
    """The units of a notebook's code cells, numbered as the cells joined by line breaks."""
    found, offset = [], 1
    for source in cells:
        found += units(source, offset)
        offset += len(source.split("\n"))
    return found


class _Normaliser:
    def __init__(self, line_offset: int):
        self.offset = line_offset
        self.units: list[Unit] = []
        self.unit = Unit()
        self.count = 0

    def run(self, source: str) -> list[Unit]:
        # Lines end at "\n" only, as the report numbers them (str.splitlines also breaks
        # at form feeds and other separators Python's tokenizer does not).
        lines = io.StringIO(source).readlines()
        start, restarts = 0, 0
        while start < len(lines) and self.count < MAX_TOKENS:
            stop = self._tokenise(lines, start)
            if stop is None or restarts >= MAX_RESTARTS:
                break
            # What does not tokenise (an unterminated string, a bad dedent) is skipped from
            # its line on, and reading resumes on the next line as a new statement.
            start, restarts = stop + 1, restarts + 1
            self._new_unit()
        self._new_unit()
        return self.units

    def _new_unit(self) -> None:
        if self.unit.tokens:
            self.units.append(self.unit)
        self.unit = Unit()

    def _tokenise(self, lines: list[str], start: int) -> int | None:
        """Tokenise lines[start:]; None when done, else the index of the line that failed."""
        depth = 0                 # indentation depth
        logical: list[tokenize.TokenInfo] = []
        decorated = False         # the last top-level statement was a decorator line
        fstring = 0
        reader = io.StringIO("".join(lines[start:])).readline
        kept_upto = start         # lines before this index were fully handled
        try:
            for tok in tokenize.generate_tokens(reader):
                if tok.type in _SKIPPED:
                    continue
                if tok.type == _FSTRING_START:
                    fstring += 1
                    if fstring == 1:
                        logical.append(tok._replace(type=tk.STRING))
                    continue
                if fstring:
                    fstring -= tok.type == _FSTRING_END
                    continue
                if tok.type == tk.INDENT:
                    depth += 1
                    self._emit("{", tok.start[0] + start)
                    continue
                if tok.type == tk.DEDENT:
                    depth -= 1
                    self._emit("}", self.unit.lines[-1] - self.offset if self.unit.lines
                               else tok.start[0] + start)
                    continue
                if tok.type == tk.NEWLINE or (tok.type == tk.OP and tok.string == ";"):
                    if logical:
                        if depth == 0 and logical[0].string not in _CONTINUES \
                                and not decorated:
                            self._new_unit()
                        if depth == 0:
                            decorated = logical[0].string == "@"
                        self._statement(logical, start)
                        logical = []
                    kept_upto = start + tok.end[0]
                    if self.count >= MAX_TOKENS:
                        return None
                    continue
                if tok.type == tk.ERRORTOKEN and not tok.string.strip():
                    continue
                logical.append(tok)
                if self.count + len(logical) >= MAX_TOKENS:   # one endless statement
                    return None
        except (tokenize.TokenError, SyntaxError) as e:   # IndentationError is a SyntaxError
            line = e.args[1][0] if isinstance(e, tokenize.TokenError) else (e.lineno or 1)
            return max(kept_upto, start + max(line, 1) - 1)
        return None

    def _statement(self, logical: list[tokenize.TokenInfo], start: int) -> None:
        """Add one statement's tokens, or nothing for a docstring, bare string or `pass`."""
        if all(t.type == tk.STRING for t in logical):
            return
        if len(logical) == 1 and logical[0].string == "pass":
            return
        previous = ""
        for i, t in enumerate(logical):
            text = t.string
            if t.type == tk.NAME:
                if not (keyword.iskeyword(text) or text in _BUILTINS or previous == "."):
                    text = "V"
            elif t.type == tk.NUMBER:
                text = "N"
            elif t.type == tk.STRING:
                text = "S"
            elif text == "," and i + 1 < len(logical) and logical[i + 1].string in _CLOSING:
                previous = text
                continue
            previous = t.string
            self._emit(text, t.start[0] + start)
        self._emit(";", logical[-1].end[0] + start)

    def _emit(self, text: str, line: int) -> None:
        self.unit.tokens.append(text)
        self.unit.lines.append(line + self.offset)
        self.count += 1
