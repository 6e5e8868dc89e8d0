"""Grading a whole class: parallel workers, a progress bar, and a resumable cache.

Each finished submission is written at once to `<out>/.cache/<key>.json`, the key being a hash of
the submission's content and of the assignment's version (question files, snapshots, reference,
template and engine). A run that is interrupted (Ctrl-C, kill -9, reboot) and started again
regrades nothing already graded; a run on an unchanged class starts no sandbox at all.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from .assignment import Assignment
from .classlist import Student, display
from .limits import Limits
from .results import SubmissionResult, submission_from_json

ENGINE_DIR = Path(__file__).resolve().parent


@dataclass
class Graded:
    student: Student
    result: SubmissionResult
    cached: bool = False


def assignment_version(assignment: Assignment) -> str:
    return _version_of(str(assignment.root), str(assignment.template),
                       str(assignment.reference_path or ""))


@functools.lru_cache(maxsize=None)
def _version_of(root: str, template: str, reference: str) -> str:
    """A hash of everything that can change a grade besides the submission itself."""
    h = hashlib.sha256()
    root_path = Path(root)
    files = sorted(p for p in root_path.rglob("*")
                   if p.is_file() and "examples" not in p.relative_to(root_path).parts
                   and "__pycache__" not in p.parts)
    files += [Path(template)] + sorted(ENGINE_DIR.glob("*.py"))
    if reference:
        files.append(Path(reference))
    for p in files:
        h.update(str(p.name).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_key(assignment: Assignment, content: bytes, limits: Limits) -> str:
    h = hashlib.sha256(content)
    h.update(assignment_version(assignment).encode())
    h.update(repr(limits).encode())
    return h.hexdigest()


class ResultCache:
    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def get(self, key: str) -> SubmissionResult | None:
        path = self.folder / f"{key}.json"
        try:
            return submission_from_json(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, or half-written by a killed run: grade again

    def put(self, key: str, result: SubmissionResult) -> None:
        path = self.folder / f"{key}.json"
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(result.to_json()))
        os.replace(tmp, path)  # atomic: a kill leaves the old file or none, never half of one


def grade_class(assignment: Assignment, students: list[Student], *, out: Path | None,
                jobs: int, sandbox_level: str, limits: Limits, progress: bool = True,
                questions: list[str] | None = None, public_only: bool = False) -> list[Graded]:
    """Grade every student once (cached results reused); returns results in class order."""
    from .grade import grade_submission
    from .sandbox import Sandbox

    cache = ResultCache(out / ".cache") if out else None
    graded: list[Graded | None] = [None] * len(students)
    todo: list[tuple[int, str | None]] = []
    for i, s in enumerate(students):
        key = None
        if cache is not None:
            if s.file is None:
                content = b"\0missing\0" + (s.problem or "").encode()
            else:
                try:
                    content = s.file.read_bytes()
                except OSError:
                    content = b""
            options = f"{questions}|{public_only}".encode()
            key = cache_key(assignment, content + options, limits)
            hit = cache.get(key)
            if hit is not None:
                hit.path = display(str(s.file or s.folder or s.name))
                graded[i] = Graded(s, hit, cached=s.file is not None)
                continue
        if s.file is None:
            from .runner import failed_everywhere  # imports otter and torch: only when needed

            row = failed_everywhere(assignment, display(str(s.folder or s.name)), "error",
                                    s.problem or "nothing to grade",
                                    include_hidden=not public_only)
            if cache is not None and key is not None:
                cache.put(key, row)
            graded[i] = Graded(s, row)
            continue
        todo.append((i, key))

    local = threading.local()
    sandboxes: list = []
    lock = threading.Lock()

    def work(i: int, key: str | None) -> tuple[int, SubmissionResult]:
        if not hasattr(local, "sandbox"):
            with lock:
                slot = len(sandboxes)
                sandboxes.append(None)
            local.sandbox = Sandbox(sandbox_level, slot=slot)
            with lock:
                sandboxes[slot] = local.sandbox
        s = students[i]
        result = grade_submission(assignment, s.file, local.sandbox, limits, questions=questions,
                                  display_path=display(str(s.file)),
                                  include_hidden=not public_only)
        if cache is not None and key is not None:
            cache.put(key, result)
        return i, result

    bar = None
    if todo and progress:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="sub", desc="grading", dynamic_ncols=True,
                   smoothing=0.1, disable=None)  # None: only on a terminal
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo) or 1))) as pool:
            futures = [pool.submit(work, i, key) for i, key in todo]
            for fut in as_completed(futures):
                i, result = fut.result()
                graded[i] = Graded(students[i], result)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        for sb in sandboxes:
            if sb is not None:
                sb.close()
    for g in graded:
        g.result.student = g.student.name
        g.result.notes = list(g.student.notes)
    return graded  # type: ignore[return-value]


def sandbox_description(graded: list[Graded]) -> str | None:
    for g in graded:
        if g.result.sandbox:
            return g.result.sandbox
    return None
