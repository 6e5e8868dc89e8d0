"""Finding submission files and reading their Python source, without running anything.

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

SUFFIXES = (".py", ".ipynb")
MAX_BYTES = 2 * 2**20            # Python source, and the code of a notebook
MAX_NOTEBOOK_BYTES = 32 * 2**20  # a notebook file, outputs and images included
MAX_CELLS = 2000


class UnreadableSubmission(Exception):
    """A submission whose source cannot be read: the message says why, for its row."""


@dataclass
class Cell:
    number: int     # 1-based position among all the notebook's cells, as the student sees them
    source: str     # the cell's code, IPython-only lines turned into `pass`


@dataclass
class Submission:
    source: str                      # the whole Python source (a notebook's cells joined)
    cells: list[Cell] | None = None  # a notebook's code cells; None for a .py file
    notes: list[str] = field(default_factory=list)   # things the student should know


def find_submissions(paths: list[str]) -> list[Path]:
    """Files as given; folders contribute their .py/.ipynb files (recursively), sorted."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in SUFFIXES
                            and not any(part.startswith((".", "__pycache__"))
                                        for part in f.relative_to(p).parts))
        else:
            found.append(p)
    seen, unique = set(), []
    for f in found:
        key = str(f.resolve()) if f.exists() else str(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def read_source(path: Path) -> str:
    """The Python source of a `.py` file or of a notebook's code cells."""
    return read_submission(path).source


def read_submission(path: Path) -> Submission:
    """Read a `.py` file or a notebook; UnreadableSubmission says why it cannot be read."""
    limit = MAX_NOTEBOOK_BYTES if path.suffix == ".ipynb" else MAX_BYTES
    try:
        size = path.stat().st_size
        if size > limit:
            raise UnreadableSubmission(f"the file is larger than {limit // 2**20} MB")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UnreadableSubmission(f"file not found: {path}") from None
    except OSError as e:
        raise UnreadableSubmission(f"cannot read the file: {e.strerror}") from None
    if len(raw) > limit:
        raise UnreadableSubmission(f"the file is larger than {limit // 2**20} MB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnreadableSubmission(f"the file is not UTF-8 text (byte {e.start})") from None
    if path.suffix == ".ipynb":
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
_NOTEBOOK_VAR = re.compile(r"^\s*(\w+)\s*=\s*(?:otter\s*\.\s*)?Notebook\s*\(", re.M)
_MAGIC_ASSIGN = re.compile(r"^[\w.\[\], ()]+=\s*[!%]")


def read_notebook(text: str) -> Submission:
    """A notebook's code cells, checked to be a Python notebook."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise UnreadableSubmission(f"the notebook is not valid JSON ({_short(e)}); was it saved "
                                   "completely? Open it in Jupyter and save it again") from None
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
    for number, cell in enumerate(raw_cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            continue
        if "\x00" in source:
            raise UnreadableSubmission(f"cell {number} of the notebook contains NUL bytes")
        sources.append((number, source))
    notebook_vars = {"grader"} | {m.group(1) for _, s in sources for m in _NOTEBOOK_VAR.finditer(s)}
    cells = [Cell(number, python_lines(source, notebook_vars)) for number, source in sources]
    joined = "\n".join(c.source for c in cells)
    if len(joined.encode()) > MAX_BYTES:
        raise UnreadableSubmission(f"the notebook has more than {MAX_BYTES // 2**20} MB of code")
    return Submission(joined + "\n" if joined else "", cells, notes)


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
    otter_call = re.compile(r"\b(?:%s)\s*\.\s*\w+\s*\(" % "|".join(
        re.escape(v) for v in sorted(notebook_vars)))
    out: list[str] = []
    depth = 0          # brackets left open by a neutralised statement that goes on
    for line in lines:
        stripped = line.strip()
        if depth > 0:
            depth += _bracket_balance(line)
            out.append("# " + line)
            continue
        if stripped.startswith("%time ") and depth == 0:
            # `%time statement` runs the statement (and reports how long it took)
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + stripped[len("%time "):])
            continue
        if _ipython_only(stripped) or re.match(r"(import\s+otter\b|from\s+otter\b)", stripped) \
                or otter_call.search(stripped) \
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
    return bool(_MAGIC_ASSIGN.match(stripped))


def _bracket_balance(line: str) -> int:
    code = line.split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")
