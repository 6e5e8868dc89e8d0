"""Who the students are: turning a folder of submissions into one entry per student.

Understood layouts, per path given on the command line:

* a file: one student, named after the file;
* a Gradescope submissions export (a folder with `submission_metadata.yml`): one student per
  `submission_<id>` folder, named from the metadata;
* a folder with one subfolder per student (what GitHub Classroom's clone tooling produces):
  one student per subfolder, their file found inside;
* a folder of files: one student per file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SUFFIXES = (".py", ".ipynb")
SKIP_DIRS = {".git", "__pycache__", ".github", ".ipynb_checkpoints", "tests", "node_modules",
             ".venv", "venv"}


@dataclass
class Student:
    name: str
    folder: Path | None          # the student's own folder, when the layout has one
    file: Path | None            # the file to grade (None: nothing gradable was found)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None   # why there is nothing to grade


def display(text: str) -> str:
    """A printable form of a file name that may not be valid UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _candidates(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(SUFFIXES) and not f.startswith("."):
                found.append(Path(dirpath) / f)
    return found


def choose_file(folder: Path, student_file: str) -> tuple[Path | None, list[str]]:
    """The file to grade in a student's folder, and notes on what was passed over."""
    files = _candidates(folder)
    if not files:
        return None, []
    stem = Path(student_file).stem

    def rank(p: Path) -> tuple:
        exact = p.name == student_file
        notebook = p.suffix == ".ipynb" and p.stem == stem
        return (0 if exact else 1 if notebook else 2, len(p.relative_to(folder).parts), str(p))

    files.sort(key=rank)
    chosen, others = files[0], files[1:]
    notes = []
    if others:
        rel = [display(str(p.relative_to(folder))) for p in others[:5]]
        notes.append(f"graded {display(str(chosen.relative_to(folder)))}; also found "
                     f"{', '.join(rel)}{' ...' if len(others) > 5 else ''}, not graded")
    return chosen, notes


def _gradescope_names(folder: Path) -> dict[str, str]:
    import yaml

    try:
        meta = yaml.safe_load((folder / "submission_metadata.yml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    names = {}
    for key, info in meta.items() if isinstance(meta, dict) else []:
        submitters = (info or {}).get(":submitters") or (info or {}).get("submitters") or []
        who = [str(s.get(":name") or s.get("name") or s.get(":email") or "")
               for s in submitters if isinstance(s, dict)]
        if any(who):
            names[str(key)] = " & ".join(w for w in who if w)
    return names


def discover(paths: list[str], student_file: str) -> list[Student]:
    students: list[Student] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            students.append(Student(display(path.name or raw), None, None,
                                    problem=f"not found: {display(raw)}"))
        elif path.is_file():
            students.append(Student(display(path.stem), None, path))
        elif (path / "submission_metadata.yml").is_file():
            names = _gradescope_names(path)
            for sub in sorted(p for p in path.iterdir() if p.is_dir()):
                students.append(_from_folder(sub, names.get(sub.name, display(sub.name)),
                                             student_file))
        else:
            subdirs = sorted(p for p in path.iterdir()
                             if p.is_dir() and p.name not in SKIP_DIRS
                             and not p.name.startswith("."))
            loose = sorted(p for p in path.iterdir()
                           if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith("."))
            for f in loose:
                students.append(Student(display(f.stem), None, f))
            for d in subdirs:
                students.append(_from_folder(d, display(d.name), student_file))
    _unique_names(students)
    return students


def _from_folder(folder: Path, name: str, student_file: str) -> Student:
    chosen, notes = choose_file(folder, student_file)
    if chosen is None:
        return Student(name, folder, None,
                       problem=f"no {student_file} or notebook found in the folder")
    return Student(name, folder, chosen, notes)


def _unique_names(students: list[Student]) -> None:
    seen: dict[str, int] = {}
    for s in students:
        n = seen.get(s.name, 0)
        seen[s.name] = n + 1
        if n:
            s.name = f"{s.name} ({n + 1})"
