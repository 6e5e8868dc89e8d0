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
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..intake.student_files import SKIP_DIRS, SUFFIXES, is_link, pick_file


@dataclass
class Student:
    name: str
    folder: Path | None          # the student's own folder, when the layout has one
    file: Path | None            # the file to grade (None: nothing gradable was found)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None   # why there is nothing to grade
    missing: bool = False        # nothing was submitted (not a submission that cannot be read)


def display(text: str) -> str:
    """A printable form of a file name that may not be valid UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def choose_file(folder: Path, student_file: str, bundle: Mapping[str, bytes] | None = None
                ) -> tuple[Path | None, list[str]]:
    """The file to grade in a student's folder, and notes on what was passed over. `bundle`
    ({path: content} of the student bundle the repository was made from) keeps the bundle's
    own files out of the notes: a repository made from it holds them all (changes to them are
    the repository flags' business), so only files the student added are worth a note."""
    pick = pick_file(folder, student_file, ambiguous="closest")
    if pick.file is None:
        return None, []
    others = [p for p in pick.others if not _from_bundle(folder, p, bundle or {}, student_file)]
    notes = []
    if others:
        rel = [display(str(p.relative_to(folder))) for p in others[:5]]
        notes.append(f"graded {display(str(pick.file.relative_to(folder)))}; also found "
                     f"{', '.join(rel)}{' ...' if len(others) > 5 else ''}, not graded")
    return pick.file, notes


def _from_bundle(folder: Path, path: Path, bundle: Mapping[str, bytes], student_file: str
                 ) -> bool:
    """Whether `path` is one of the bundle's files: any shipped path, or an answer file (the
    `.py`, the notebook) still as handed out. An answer file the student changed is not: work
    in the file that was not graded deserves its note."""
    rel = path.relative_to(folder).as_posix()
    if rel not in bundle:
        return False
    if rel not in (student_file, Path(student_file).stem + ".ipynb"):
        return True
    try:   # a link or a FIFO in its place is not the handed-out file (and is never read)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size != len(bundle[rel]):
            return False
        return path.read_bytes() == bundle[rel]
    except OSError:
        return False


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


def missing_paths(paths: list[str]) -> list[str]:
    """The paths given that do not exist (`discover` gives each a row saying so)."""
    missing = []
    for raw in paths:
        try:
            os.stat(raw)
        except OSError:
            missing.append(raw)
    return missing


def discover(paths: list[str], student_file: str, *,
             bundle: Mapping[str, bytes] | None = None) -> list[Student]:
    """One entry per student. Nothing here follows a link inside a class folder: a student's
    folder or file that is a link gets a row saying so (see student_files). `bundle`: the
    student bundle's files, left out of the "also found" notes (see `choose_file`)."""
    students: list[Student] = []
    for raw in paths:
        path = Path(raw)
        try:
            mode = os.stat(path).st_mode   # the path given may be a link the instructor made
        except OSError:
            students.append(Student(display(path.name or raw), None, None,
                                    problem=f"not found: {display(raw)}"))
            continue
        if not stat.S_ISDIR(mode):
            # A file given by name: read_student_file decides whether it can be graded.
            students.append(Student(display(path.stem), None, path))
        elif (path / "submission_metadata.yml").is_file():
            names = _gradescope_names(path)
            for sub in sorted(p for p in path.iterdir() if _is_folder(p)):
                students.append(_from_folder(sub, names.get(sub.name, display(sub.name)),
                                             student_file, bundle))
        else:
            entries = sorted(path.iterdir())
            subdirs = [p for p in entries if p.name not in SKIP_DIRS
                       and not p.name.startswith(".") and _is_folder(p)]
            loose = [p for p in entries if p.suffix in SUFFIXES and not p.name.startswith(".")
                     and not _is_folder(p)]
            for f in loose:
                students.append(Student(display(f.stem), None, f))
            for d in subdirs:
                students.append(_from_folder(d, display(d.name), student_file, bundle))
    _unique_names(students)
    return students


def _is_folder(path: Path) -> bool:
    """A folder, or a link to one (a student's folder that is a link gets a row refusing it)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


LINKED_FOLDER = ("the student's folder is a symbolic link, not a folder; nothing in it was "
                 "graded (links are not followed)")


def _from_folder(folder: Path, name: str, student_file: str,
                 bundle: Mapping[str, bytes] | None = None) -> Student:
    if is_link(folder):
        # Its files may be anyone's (the reference, another student's): nothing is graded.
        return Student(name, None, None, problem=LINKED_FOLDER)
    chosen, notes = choose_file(folder, student_file, bundle)
    if chosen is None and _is_empty(folder):
        # Nothing handed in (a clone made before any push, a folder made for everyone).
        return Student(name, folder, None, problem="missing: the student's folder is empty",
                       missing=True)
    if chosen is None:
        return Student(name, folder, None,
                       problem=f"no {student_file} or notebook found in the folder")
    return Student(name, folder, chosen, notes)


def _is_empty(folder: Path) -> bool:
    """Nothing in the folder but hidden entries (`.git` of a repository with no work in it)."""
    try:
        with os.scandir(folder) as entries:
            return not any(not e.name.startswith(".") for e in entries)
    except OSError:
        return False


def _unique_names(students: list[Student]) -> None:
    seen: dict[str, int] = {}
    for s in students:
        n = seen.get(s.name, 0)
        seen[s.name] = n + 1
        if n:
            s.name = f"{s.name} ({n + 1})"
