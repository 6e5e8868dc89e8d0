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
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..model.assignment import Assignment
from .classlist import Student, display
from ..model import project
from ..model.results import SubmissionResult, submission_from_json
from ..model.limits import Limits
from ..model.status import CaseStatus, QuestionStatus


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
    files += [Path(template)]
    if reference:
        files.append(Path(reference))
    for p in files:
        h.update(str(p.name).encode())
        h.update(p.read_bytes())
    project.hash_engine(h, project.ENGINE_DIR)   # every engine file, subpackages included
    return h.hexdigest()[:16]


def _content_for_key(file: Path) -> bytes:
    """What a submission's cache key hashes: its bytes, read as grading reads them (a link, a
    FIFO or a huge file is not read: the reason it is refused stands in for the content)."""
    from ..intake.student_files import UnreadableSubmission, read_student_file
    from ..intake.submissions import MAX_NOTEBOOK_BYTES

    try:
        return read_student_file(file, MAX_NOTEBOOK_BYTES)
    except UnreadableSubmission as e:
        return b"\0unreadable\0" + str(e).encode()


def cache_key(assignment: Assignment, content: bytes, limits: Limits) -> str:
    h = hashlib.sha256(content)
    h.update(assignment_version(assignment).encode())
    h.update(repr(limits).encode())
    return h.hexdigest()


def descriptions_file(folder: Path, assignment: Assignment) -> Path:
    """Where a class run's cache keeps the catalogue's names and hints of its mistakes
    (`describe_mistakes`), written by a grading process, which has the catalogue loaded: the
    report reads them there instead of loading the catalogue (and torch) itself."""
    # Not `.json`: every `*.json` of the cache is a submission's result.
    return folder / f"mistakes-{assignment_version(assignment)}.names"


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
                jobs: int | None, sandbox_level: str, limits: Limits, progress: bool = True,
                questions: list[str] | None = None, public_only: bool = False,
                share_torch: bool = False) -> list[Graded]:
    """Grade every student once (cached results reused); returns results in class order.
    `jobs`: how many grading processes; None picks from the cores and what is left to grade
    (`auto_jobs`)."""
    from ..sandbox import choose_level

    cache = ResultCache(out / ".cache") if out else None
    graded: list[Graded | None] = [None] * len(students)
    todo: list[tuple[int, str | None]] = []
    for i, s in enumerate(students):
        key = None
        if cache is not None:
            if s.file is None:
                content = f"\0{_nothing_status(s)}\0{s.problem or ''}".encode()
            else:
                content = _content_for_key(s.file)
            # A notebook's own name is in its feedback ("cell 5 of nb.ipynb").
            own = s.file.name if s.file is not None and s.file.suffix == ".ipynb" else ""
            options = f"{questions}|{public_only}|{own}".encode()
            key = cache_key(assignment, content + options, limits)
            hit = cache.get(key)
            if hit is not None:
                hit.path = _shown_path(s)
                graded[i] = Graded(s, hit, cached=s.file is not None)
                continue
        if s.file is None:
            from ..grading.runner import failed_everywhere  # imports otter and torch: only when needed

            row = failed_everywhere(assignment, _shown_path(s), _nothing_status(s),
                                    s.problem or "nothing to grade",
                                    include_hidden=not public_only)
            if cache is not None and key is not None:
                cache.put(key, row)
            graded[i] = Graded(s, row)
            continue
        todo.append((i, key))

    if todo:
        sandbox_level = choose_level(sandbox_level)   # refuse here, before any process starts
    if jobs is None:
        jobs = auto_jobs(len(todo))
    grader = _Grader(assignment, sandbox_level, limits, questions, public_only, cache)
    grader.share_torch = share_torch
    if todo and share_torch and min(jobs, len(todo)) <= 1:
        # Forked from this process while it runs no other thread (the progress bar has one).
        grader.start_sandbox()
    bar = None
    if todo and progress:
        from tqdm import tqdm

        class Bar(tqdm):
            # No monitoring thread: the grading processes are forks of this one (a thread
            # running here would make them spawned instead: `_forked_start`).
            monitor_interval = 0

        bar = Bar(total=len(todo), unit="sub", desc="grading", dynamic_ncols=True,
                   smoothing=0.1, disable=None)  # None: only on a terminal
    try:
        for i, result in _grade_all(grader, [(i, students[i].file, key) for i, key in todo],
                                    jobs):
            graded[i] = Graded(students[i], result)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    for g in graded:
        if questions:
            # Rows made without running anything (nothing to grade, a syntax error, the
            # grader's own failure) list every question: keep the ones this run grades.
            g.result.questions = {k: v for k, v in g.result.questions.items()
                                  if k in questions}
        g.result.student = g.student.name
        complete_written(assignment, g.result, questions)   # rows with no file have none
        # The folder's notes first; the submission's own (an integrity flag, notebook cells)
        # are kept.
        g.result.notes = list(g.student.notes) + [n for n in g.result.notes
                                                  if n not in g.student.notes]
    return graded  # type: ignore[return-value]


# A grading process of its own costs two starts of torch (it and its fork server), about four
# seconds of CPU; one process grades about six submissions a second. Below about forty
# submissions a second process costs more than it saves (measured on two cores: 48 submissions
# took as long either way, 200 took a third less with two).
SUBMISSIONS_PER_PROCESS = 40


def complete_written(assignment: Assignment, result: SubmissionResult,
                     questions: list[str] | None) -> None:
    """Every written question in every row, so each total counts its points: a row graded
    without a file to read (none found, unreadable) has them unanswered."""
    from ..written.collect import unanswered

    missing = [q for q in assignment.written if q.id not in result.written
               and (questions is None or q.id in questions)]
    result.written.update(unanswered(missing))
    if result.missing:   # nothing handed in: its written questions are missing too
        for a in result.written.values():
            a.status = str(QuestionStatus.MISSING)


def auto_jobs(to_grade: int, cores: int | None = None) -> int:
    """The default number of grading processes: one per core, but no more than one per
    `SUBMISSIONS_PER_PROCESS` submissions to grade."""
    cores = cores or os.cpu_count() or 1
    return max(1, min(cores, -(-to_grade // SUBMISSIONS_PER_PROCESS)))


def _nothing_status(s: Student) -> CaseStatus:
    """The status of a student with no file to grade: "missing" when nothing was submitted,
    "error" when what was submitted cannot be graded (an empty folder, a link)."""
    return CaseStatus.MISSING if s.missing else CaseStatus.ERROR


def _shown_path(s: Student) -> str:
    """The row's `path`: the file graded, else the student's folder; empty for a roster
    student with neither (their name is in the student column, not a file)."""
    where = s.file or s.folder
    if where is None:
        return "" if s.missing else display(s.name)
    return display(str(where))


class _Grader:
    """Grades one submission after another with one sandbox (started on first use)."""

    def __init__(self, assignment: Assignment, sandbox_level: str, limits: Limits,
                 questions: list[str] | None, public_only: bool, cache: ResultCache | None,
                 slot: int = 0):
        self.assignment, self.sandbox_level, self.limits = assignment, sandbox_level, limits
        self.questions, self.public_only, self.cache, self.slot = \
            questions, public_only, cache, slot
        self.sandbox = None
        self.share_torch = False     # fork the first fork server from this process
        # The run's folder of variant outcomes the grading processes share (`_grade_all`).
        self.shared_outcomes: str | None = None
        self._started = False
        self._described = False

    def start_sandbox(self) -> None:
        from ..sandbox import Sandbox

        if self.sandbox is None:
            # Only a first start can share this process's torch: later ones (after a fault)
            # come from a process that has read the reference and the hidden cases.
            share = self.share_torch and not self._started and \
                _nothing_secret_loaded(self.assignment)
            self._started = True
            self.sandbox = Sandbox(self.sandbox_level, slot=self.slot, wait=False,
                                   share_torch=share)
            if self.share_torch and not share:
                self.sandbox.description += (
                    "; fork server started apart, torch not shared: this grading process had "
                    "already read the assignment's private files (a restart after a fault)")

    def grade(self, file: Path, key: str | None) -> SubmissionResult:
        """One submission's row, whatever happens while grading it (`grade_submission` already
        turns its own faults into rows; this also covers starting the sandbox and the cache).
        Only a sandbox that cannot run at all (SandboxError) and Ctrl-C end the run."""
        from ..sandbox import SandboxError

        shown = display(str(file))
        try:
            # The fork server first: it imports torch while this process imports the grading
            # code (torch too), side by side on two cores rather than one after the other.
            self.start_sandbox()
            from ..grading.grade import grade_submission

            _one_thread()
            share = None
            if self.shared_outcomes:
                from ..diagnose.shared_outcomes import shared

                share = shared()
                if share is not None:
                    share.take_in()     # what the other grading processes computed so far
            try:
                result = grade_submission(self.assignment, file, self.sandbox, self.limits,
                                          questions=self.questions, display_path=shown,
                                          include_hidden=not self.public_only)
            finally:
                if share is not None:
                    share.publish()
        except SandboxError:
            raise
        except Exception as e:  # noqa: BLE001 - one submission must never end a class run
            from ..grading.grade import report_internal_error
            from ..grading.runner import internal_error

            from ..grading.grade import with_answers_of_file

            report_internal_error(shown, e)
            result = with_answers_of_file(self.assignment, internal_error(
                self.assignment, shown, e, include_hidden=not self.public_only), file,
                self.questions)
        if _internal_error(result):
            # Not kept in the cache: the next run tries again. The sandbox may be in any state
            # after a fault of the grader: the next submission gets a fresh one.
            try:
                self.close()
            except Exception:  # noqa: BLE001 - a fresh one is started all the same
                self.sandbox = None
            return result
        if self.cache is not None and key is not None:
            try:
                self.cache.put(key, result)
            except OSError as e:
                print(f"autograder: could not cache the result of {shown}: {e}", file=sys.stderr)
            self._describe()
        return result

    def _describe(self) -> None:
        """Once per grading process: the names and hints of the catalogue's mistakes, for the
        report (`descriptions_file`)."""
        if self._described:
            return
        self._described = True
        try:
            from ..diagnose import describe_mistakes

            path = descriptions_file(self.cache.folder, self.assignment)
            if not path.exists():
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(describe_mistakes(self.assignment)))
                os.replace(tmp, path)
        except Exception:  # noqa: BLE001 - the report loads the catalogue itself instead
            pass

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


def _one_thread() -> None:
    """This grading process compares small tensors while its worker computes the next: torch's
    pool of threads would only spin on the cores the workers and the other jobs need (measured
    on two cores: about a tenth less time with one job, a quarter less CPU with two)."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def _nothing_secret_loaded(assignment: Assignment) -> bool:
    """Whether this process has read none of the assignment's private files yet (question
    files, snapshots, the reference, the mistakes catalogue): then a fork of it holds nothing
    a student may not see."""
    from ..grading.runner import load_question_file

    if load_question_file.cache_info().currsize or _version_of.cache_info().currsize:
        return False
    private = [str(assignment.root.resolve())]
    if assignment.reference_path is not None:
        private.append(str(Path(assignment.reference_path).resolve().parent))
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and any(os.path.realpath(file).startswith(p + os.sep) for p in private):
            return False
    return True


def _internal_error(result: SubmissionResult) -> bool:
    return any(c.status == CaseStatus.INTERNAL_ERROR for q in result.questions.values() for c in q.cases) \
        or (not result.questions and bool(result.error))


def _grade_all(grader: _Grader, todo: list[tuple[int, Path, str | None]], jobs: int):
    """Yield (index, result) as submissions finish. With more than one job, each grading
    process has its own sandbox and its own interpreter: the trusted side's comparisons are
    Python code, which threads of one process would run one at a time."""
    jobs = max(1, min(jobs, len(todo)))
    if jobs == 1:
        yield from _grade_here(grader, [(i, (file, key)) for i, file, key in todo])
        return
    import multiprocessing

    # Each grading process takes the next sandbox slot (its own unprivileged uid).
    slots = multiprocessing.get_context("spawn").Value("i", 0)
    pending = {i: (file, key) for i, file, key in todo}
    # The grading processes share the variant outcomes they compute (`shared_outcomes`), in a
    # folder of this run's own, private to this user.
    folder = grader.shared_outcomes = outcomes_folder()
    try:
        for start in range(MAX_POOL_STARTS):
            yield from _grade_in_pool(grader, pending, jobs, slots, first=start == 0)
            if not pending:
                return
        # Grading processes keep dying (the machine's out-of-memory killer, say): go on in
        # this one.
        grader.shared_outcomes = None
        yield from _grade_here(grader, list(pending.items()))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


OUTCOMES_PREFIX = "autograder-outcomes-"


def outcomes_folder() -> str:
    """A new folder for a run's shared variant outcomes, named after this process. The folders
    of runs killed before they could remove theirs (their process is gone) are removed first."""
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        entries = []
    for entry in entries:
        pid = entry.name[len(OUTCOMES_PREFIX):].split("-")[0]
        try:
            if not (entry.name.startswith(OUTCOMES_PREFIX) and pid.isdigit()
                    and entry.is_dir(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid()):
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except (OSError, ValueError):
            pass    # alive (or not ours to ask about): left alone
    return tempfile.mkdtemp(prefix=f"{OUTCOMES_PREFIX}{os.getpid()}-")


def _grade_here(grader: _Grader, items: list[tuple[int, tuple[Path, str | None]]]):
    """Grade one after another in this process."""
    try:
        for i, (file, key) in items:
            yield i, grader.grade(file, key)
    finally:
        grader.close()


MAX_POOL_STARTS = 3


def _grade_in_pool(grader: _Grader, pending: dict, jobs: int, slots, first: bool = True):
    """Grade `pending` ({index: (file, key)}) in a pool of grading processes, removing each
    as it is yielded. Returns early, leaving the rest pending, if a grading process dies.
    The `first` pool's processes are forks of this one (`_forked_start`) where they can be."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    started = _forked_start(grader, jobs) if first else None
    # Otherwise "spawn": a fresh interpreter per grading process, which imports torch itself.
    context = multiprocessing.get_context("fork" if started is not None else "spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_start_process,
                               initargs=(grader, slots, started))
    futures: dict = {}
    finished = broken = False
    try:
        futures = {pool.submit(_grade_in_process, file, key): i
                   for i, (file, key) in pending.items()}
        # The first submission forked every grading process: each has its sandbox now.
        for sandbox in (started or {}).values():
            sandbox.detach()
        for fut in as_completed(futures):
            try:
                result = fut.result()
            except BrokenProcessPool:
                broken = True
                print("autograder: a grading process stopped unexpectedly; the submissions it "
                      "had not finished are graded again", file=sys.stderr)
                return
            pending.pop(futures[fut])
            yield futures[fut], result
        finished = True
    finally:
        if not finished and not broken:
            # Interrupted: grade nothing more, and do not wait for the submissions being graded
            # (the results so far are in the cache). The interpreter's exit joins the pool and
            # would wait for the submissions in flight and those already queued to a process
            # (a loop in flight costs its whole time limit), so its processes are killed now.
            # The pool then fails their futures itself; none is cancelled here, as Python 3.11
            # raises in the pool's thread when it fails a cancelled one.
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
            pool.shutdown(wait=True)
        else:
            if not finished:
                for fut in futures:
                    fut.cancel()
            # Everything graded: the grading processes close their sandboxes (each fork
            # server's exit, its cgroup) while this process writes the reports; the
            # interpreter's exit joins them. A broken pool is waited for: another one follows.
            pool.shutdown(wait=broken, cancel_futures=True)
        if started:
            # The fork servers are this process's children: waited for, and their cgroups
            # removed, as they end after their grading processes, while this process goes on
            # (the reports); the interpreter's exit waits for this thread.
            threading.Thread(target=_close_all, args=(list(started.values()),),
                             name="autograder: closing the sandboxes").start()


def _close_all(sandboxes: Iterable) -> None:
    for sandbox in sandboxes:
        sandbox.close()


def _forked_start(grader: _Grader, jobs: int) -> dict | None:
    """Start the first pool's sandboxes here, one per grading process ({slot: Sandbox}), and
    import torch and the grading code here while their fork servers import torch: the grading
    processes are then forks of this process, and the start of a run imports torch three times
    on the cores instead of four. None where grading processes cannot be forks of this one (no
    `fork`, or a thread running here, which a fork could leave holding a lock), or where a
    sandbox does not start: each grading process then starts its own (and says why not)."""
    import gc

    from ..sandbox.client import Sandbox
    from ..sandbox.shared_start import other_threads, without_pools_at_load

    if grader.share_torch or not hasattr(os, "fork") or other_threads() is not None:
        return None     # `--share-torch`: each grading process forks its own fork server
    started: dict = {}
    try:
        for slot in range(jobs):
            started[slot] = Sandbox(grader.sandbox_level, slot=slot, wait=False)
    except Exception:  # noqa: BLE001 - raised again where each grading process starts its own
        _close_all(started.values())
        return None

    def load_grading_code() -> None:
        from ..grading import grade  # noqa: F401

    gc.disable()     # as in `_start_process`: no collection passes over torch's import
    try:
        # numpy's BLAS would start a pool of threads as it loads; the grading processes
        # compare small arrays on one thread anyway (`_one_thread`).
        without_pools_at_load(load_grading_code)
        alone = other_threads() is None
    except Exception:  # noqa: BLE001 - each grading process imports it, and says what failed
        alone = False
    finally:
        gc.freeze()
        gc.enable()
    if not alone:
        _close_all(started.values())
        return None
    return started


_process_grader: _Grader | None = None


def _start_process(grader: _Grader, slots, started: dict | None = None) -> None:
    import atexit
    import gc
    import multiprocessing.util
    import signal

    from ..sandbox import protect_this_process

    global _process_grader
    protect_this_process(die_with_parent=True)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the main process's to handle
    with slots.get_lock():
        grader.slot = slots.value
        slots.value += 1
    if started is not None:
        # A fork of the main process: its sandbox is the one started there for this slot;
        # the others' fork servers are other grading processes' to talk to.
        for slot, sandbox in started.items():
            if slot == grader.slot:
                sandbox.adopt()
                grader.sandbox, grader._started = sandbox, True
            else:
                sandbox.control.close()
    _process_grader = grader
    # No collection while torch and the engine are imported: the passes cost about a sixth of
    # the import's CPU, at the start of a run, when several processes import torch on the cores.
    # What little garbage the imports leave is frozen with the rest.
    gc.disable()
    try:
        # The fork server imports torch while this process does the same for the comparisons.
        try:
            grader.start_sandbox()
        except Exception:  # noqa: BLE001 - raised again by the first grade, in the main process
            pass
        from ..grading import grade  # noqa: F401
        from ..diagnose.shared_outcomes import share_outcomes

        share_outcomes(grader.shared_outcomes)
    finally:
        # What is imported by now (torch above all) lives as long as the process: the garbage
        # collector's full passes need not scan it again for every submission.
        gc.freeze()
        gc.enable()
    multiprocessing.util.Finalize(None, grader.close, exitpriority=10)
    # Registered after torch's own handlers, so run before them: the process ends once the
    # pool's finalizers (the sandbox's close above) have run, without the interpreter's
    # teardown of torch (about half a second of CPU per grading process, for nothing).
    atexit.register(_end_now)


def _end_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _grade_in_process(file: Path, key: str | None) -> SubmissionResult:
    assert _process_grader is not None
    return _process_grader.grade(file, key)


def sandbox_description(graded: list[Graded]) -> str | None:
    for g in graded:
        if g.result.sandbox:
            return g.result.sandbox
    return None
