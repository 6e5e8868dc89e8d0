"""Reading a submission's Python source, without running anything.

A `.py` file is one piece of source. A notebook is a list of code cells, each run on its own in
the worker (as Jupyter's "run all" would, but going on after a cell fails), so one broken cell
does not cost the definitions in the others. Lines only IPython understands (magics, shell
escapes, `?` help) and otter's own calls (`grader = otter.Notebook(...)`, `grader.check(...)`)
become `pass` statements, keeping line numbers.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .student_files import UnreadableSubmission, read_student_file

MAX_BYTES = 2 * 2**20            # Python source, and the code of a notebook
MAX_NOTEBOOK_BYTES = 32 * 2**20  # a notebook file, outputs and images included
MAX_CELLS = 2000
MAX_TAGGED_CELLS = 64
MAX_TAGGED_CHARS = 64 * 1024
# JSON values a notebook may hold, counted on the text before parsing (containers, strings and
# separators: an over-count, never an under-count). A 32 MB file of `{},{},...` would otherwise
# become 11 million dicts (about 800 MB) in the grader; this caps it near 150 MB. Honest
# notebooks hold far fewer: base64 images have no separators.
MAX_JSON_VALUES = 2_000_000

__all__ = ["Cell", "Submission", "UnreadableSubmission", "read_submission", "read_notebook",
           "python_lines", "MAX_BYTES", "MAX_NOTEBOOK_BYTES", "MAX_CELLS", "MAX_JSON_VALUES"]


@dataclass
class Cell:
    number: int     # 1-based position among all the notebook's cells, as the student sees them
    source: str     # the cell's code, IPython-only lines turned into `pass`


@dataclass
class Submission:
    source: str                      # the whole Python source (a notebook's cells joined)
    cells: list[Cell] | None = None  # a notebook's code cells; None for a .py file
    notes: list[str] = field(default_factory=list)   # things the student should know
    # A notebook's tagged Markdown cells, (tags, text, length before a cut) in order: written
    # answers are the cells tagged with a question's id (the first MAX_TAGGED_CELLS of them,
    # each text cut at MAX_TAGGED_CHARS).
    tagged_markdown: list[tuple[list[str], str, int]] = field(default_factory=list)


def read_submission(path: Path) -> Submission:
    """Read a `.py` file or a notebook; UnreadableSubmission says why it cannot be read.

    The file is read as `student_files.read_student_file` allows (a regular file, no link,
    size-capped). No message quotes the file's contents.
    """
    notebook = path.suffix == ".ipynb"
    raw = read_student_file(path, MAX_NOTEBOOK_BYTES if notebook else MAX_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        # Python refuses to run it; its written answers are read from it all the same.
        raise UnreadableSubmission(f"the file is not UTF-8 text (byte {e.start})",
                                   None if notebook else raw.decode("utf-8", "replace")
                                   ) from None
    if notebook:
        return read_notebook(text)
    if "\x00" in text:
        raise UnreadableSubmission("the file contains NUL bytes; is it a Python file?")
    return Submission(text)


# ------------------------------------------------------------------ notebooks

# Kernels whose cells are not Python, by kernelspec name prefix (used when no language is given).
_OTHER_KERNELS = ("ir", "julia", "ijavascript", "javascript", "tslab", "deno", "xcpp", "xr",
                  "java", "scala", "bash", "sas", "matlab", "octave", "ruby", "gophernotes",
                  "rust", "evcxr", "kotlin", "sql", "wolfram", "haskell", "ocaml", "zsh")
_PYTHON_KERNEL = re.compile(r"(?i)python|ipykernel|^py\d*$|-py$|^conda-|venv")
# Cell magics whose body is not Python: the whole cell is skipped.
_NON_PYTHON_CELL_MAGICS = {"bash", "sh", "script", "writefile", "file", "html", "javascript",
                           "js", "latex", "markdown", "svg", "perl", "ruby", "python2",
                           "pypy", "sx", "system", "cmd", "powershell", "sql", "R", "julia"}
# Applied to one stripped line at a time with `match` (one start position), never with `^`
# under MULTILINE over a whole cell: `^\s*` there is quadratic on a run of blank lines.
_NOTEBOOK_VAR = re.compile(r"(\w+)\s*=\s*(?:otter\s*\.\s*)?Notebook\s*\(")
_OTTER_CALL = re.compile(r"\b(\w+)\s*\.\s*\w+\s*\(")
_OTTER_IMPORT = re.compile(r"(?:import|from)\s+otter\b")
MAX_NOTEBOOK_VARS = 20   # names bound to otter's Notebook: one in practice
_MAGIC_ASSIGN = re.compile(r"^[\w.\[\], ()]+=\s*[!%]")


def read_notebook(text: str) -> Submission:
    """A notebook's code cells, checked to be a Python notebook.

    Whatever the file holds, the outcome is a Submission or UnreadableSubmission (its row's
    message), never another exception: a notebook is the student's data.
    """
    try:
        return _read_notebook(text)
    except UnreadableSubmission:
        raise
    except RecursionError:
        raise UnreadableSubmission("the notebook is nested too deeply to be read; open it in "
                                   "Jupyter and save it again") from None
    except MemoryError:
        raise UnreadableSubmission("the notebook is too large to be read") from None
    except Exception as e:  # noqa: BLE001 - any malformed field ends here, with its row
        raise UnreadableSubmission(f"the notebook could not be read ({type(e).__name__}); open "
                                   "it in Jupyter and save it again") from None


def _read_notebook(text: str) -> Submission:
    values = text.count("{") + text.count("[") + text.count(",") + text.count('"') // 2
    if values > MAX_JSON_VALUES:
        raise UnreadableSubmission("the notebook holds too many values to be read; clear its "
                                   "outputs (Kernel > Restart & Clear Output) and save it")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UnreadableSubmission(f"the notebook is not valid JSON ({_short(e)}); was it saved "
                                   "completely? Open it in Jupyter and save it again") from None
    except ValueError:   # e.g. Python's limit on the digits of an integer
        raise UnreadableSubmission("the notebook holds a value that cannot be read (a number "
                                   "with too many digits?); open it in Jupyter and save it "
                                   "again") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")),
                                                    list):
        raise UnreadableSubmission("the file is not a Jupyter notebook (no list of cells)")
    notes = _check_kernel(data.get("metadata"))
    if isinstance(data.get("cells"), list):
        raw_cells, key = data["cells"], "source"
    else:  # nbformat 3
        sheets = [w for w in data["worksheets"] if isinstance(w, dict)]
        raw_cells = [c for w in sheets if isinstance(w.get("cells"), list) for c in w["cells"]]
        key = "input"
    if len(raw_cells) > MAX_CELLS:
        raise UnreadableSubmission(f"the notebook has more than {MAX_CELLS} cells")
    sources: list[tuple[int, str]] = []
    tagged: list[tuple[list[str], str, int]] = []
    total = 0
    for number, cell in enumerate(raw_cells, 1):
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown" and \
                len(tagged) < MAX_TAGGED_CELLS:
            item = _tagged_markdown(cell)
            if item is not None:
                tagged.append(item)
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            continue
        if "\x00" in source:
            raise UnreadableSubmission(f"cell {number} of the notebook contains NUL bytes")
        total += len(source)
        if total > MAX_BYTES:   # before any line is looked at
            raise UnreadableSubmission(too_much_code())
        sources.append((number, source))
    notebook_vars = {"grader"} | notebook_variables(source for _, source in sources)
    cells = [Cell(number, python_lines(source, notebook_vars)) for number, source in sources]
    joined = "\n".join(c.source for c in cells)
    if len(joined.encode()) > MAX_BYTES:
        raise UnreadableSubmission(too_much_code())
    return Submission(joined + "\n" if joined else "", cells, notes, tagged)


def _tagged_markdown(cell: dict) -> tuple[list[str], str, int] | None:
    """(tags, text cut at MAX_TAGGED_CHARS, its length) of a Markdown cell with tags (plain
    strings), else None."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    if not isinstance(tags, list):
        return None
    tags = [t for t in tags[:16] if isinstance(t, str) and len(t) <= 100]
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not tags or not isinstance(source, str):
        return None
    return tags, source[:MAX_TAGGED_CHARS], len(source)


def too_much_code() -> str:
    return f"the notebook has more than {MAX_BYTES // 2**20} MB of code"


def notebook_variables(sources) -> set[str]:
    """Names bound to otter's `Notebook(...)` (`grader = otter.Notebook(...)`), at most
    MAX_NOTEBOOK_VARS of them; linear in the length of the sources."""
    found: set[str] = set()
    for source in sources:
        if "Notebook" not in source:
            continue
        for line in source.splitlines():
            if "Notebook" in line:
                m = _NOTEBOOK_VAR.match(line.lstrip())
                if m and len(found) < MAX_NOTEBOOK_VARS:
                    found.add(m.group(1))
    return found


def _short(e: Exception) -> str:
    s = str(e)
    return s if len(s) <= 120 else s[:119] + "…"


def _check_kernel(metadata) -> list[str]:
    meta = metadata if isinstance(metadata, dict) else {}
    spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    name = str(spec.get("name") or "")[:80]
    language = str(spec.get("language") or info.get("name") or "")[:40]
    shown = str(spec.get("display_name") or name)[:80]
    if language and language.strip().lower() not in ("python", "python3", "ipython"):
        raise UnreadableSubmission(
            f"the notebook uses the kernel {shown!r} for {language}, not Python; this "
            "assignment grades Python code: start from the assignment's notebook, or choose a "
            "Python kernel (Kernel > Change kernel) and save")
    if not language and name and name.lower().split("-")[0].rstrip("0123456789.") in \
            _OTHER_KERNELS and not _PYTHON_KERNEL.search(name):
        raise UnreadableSubmission(
            f"the notebook uses the kernel {shown!r}, which does not run Python; this "
            "assignment grades Python code: choose a Python kernel (Kernel > Change kernel) "
            "and save")
    if not language and name and not _PYTHON_KERNEL.search(name):
        return [f"note: your notebook names the kernel {name!r}, which this grader does not "
                "know; its code cells were graded as Python"]
    return []


def python_lines(source: str, notebook_vars: set[str] = frozenset({"grader"})) -> str:
    """A cell's code with IPython-only and otter lines turned into `pass` (same line count)."""
    lines = source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        magic = lines[0].lstrip()[2:].split(maxsplit=1)
        if not magic or magic[0] in _NON_PYTHON_CELL_MAGICS:
            return "\n".join("# " + line for line in lines)
        lines[0] = "# " + lines[0]
    out: list[str] = []
    depth = 0          # brackets left open by a neutralised statement that goes on
    for line in lines:
        stripped = line.strip()
        if not stripped:   # the common case, kept cheap: a cell can hold a million lines
            out.append("# " + line if depth > 0 else line)
            continue
        if depth > 0:
            depth += _bracket_balance(line)
            out.append("# " + line)
            continue
        if stripped[0] not in "%?!" and stripped[-1] != "?" and "(" not in stripped \
                and "=" not in stripped and "otter" not in stripped:
            out.append(line)   # plain Python: none of the checks below can match
            continue
        if stripped.startswith("%time ") and depth == 0:
            # `%time statement` runs the statement (and reports how long it took)
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + stripped[len("%time "):])
            continue
        if _ipython_only(stripped) or ("otter" in stripped and _OTTER_IMPORT.match(stripped)) \
                or _calls_on(stripped, notebook_vars) \
                or ("Notebook(" in stripped and "otter" in stripped):
            depth = max(0, _bracket_balance(line))
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}pass  # {stripped}")
            continue
        out.append(line)
    return "\n".join(out)


def _ipython_only(stripped: str) -> bool:
    if stripped.startswith(("%", "?")) or (stripped.startswith("!") and
                                           not stripped.startswith("!=")):
        return True
    if stripped.endswith("?") and not stripped.startswith("#"):
        return True
    return "=" in stripped and ("!" in stripped or "%" in stripped) \
        and bool(_MAGIC_ASSIGN.match(stripped))


def _bracket_balance(line: str) -> int:
    count = line.partition("#")[0].count
    return count("(") + count("[") + count("{") - count(")") - count("]") - count("}")


def _calls_on(line: str, names: set[str]) -> bool:
    """Whether the line calls a method of one of `names` (`grader.check(...)`); one pass."""
    if "(" not in line or "." not in line or not any(name in line for name in names):
        return False
    return any(m.group(1) in names for m in _OTTER_CALL.finditer(line))
