"""Helpers shared by the tests: paths, corpus headers, the CLI. Tests import them from here
(`from helpers import ...`); fixtures live in conftest.py."""
from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple
from autograder.feedback.plain import question_feedback

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "tests" / "submissions"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


QUESTIONS = ["softmax", "attention", "mask", "split_heads", "multi_head", "block"]
# `autograder grade` graded every row: 0, or 4 when some row needs the instructor (tampering,
# review, internal error; `course/needs_instructor.py`). Classes of attacks end with either.
GRADED = (0, 4)
# The torch track's written questions (graded by hand): in every row's maximum, 0 points while
# unanswered (no file of the corpus answers them), pending once answered.
WRITTEN = ["why_scale", "why_causal_mask", "why_positions", "why_quadratic"]
WRITTEN_POINTS = {"why_scale": 3, "why_causal_mask": 3, "why_positions": 2, "why_quadratic": 2}
WRITTEN_MAX = sum(WRITTEN_POINTS.values())
# The torch track's autograded points: 22 hidden cases and 25 public ones (the public cases
# catch every catalogued mistake; docs/naming-mistakes.md).
AUTOGRADED_MAX = 47
PUBLIC_MAX = 25
MAX_SCORE = AUTOGRADED_MAX + WRITTEN_MAX


# ------------------------------------------------------------------ every assignment
# Tests about every assignment iterate the folders of assignments/ (an assignment dropped in
# there is tested like the shipped ones); these say where each one's test material lives.

def assignment_names() -> list[str]:
    """Every assignment of the project: the folders of assignments/ holding an assignment.toml."""
    return sorted(d.name for d in (ROOT / "assignments").iterdir()
                  if (d / "assignment.toml").is_file())


# The corpora of the two first assignments predate the convention below and stay where the
# docs and their tests name them.
_CORPUS_FOLDERS = {"attention": SUBMISSIONS, "attention_numpy": SUBMISSIONS / "numpy"}


def corpus_of(name: str) -> Path | None:
    """An assignment's corpus of planted mistakes: `tests/submissions/<name>/`, holding
    `wrong/` (each file with `# loses:`, `# keeps:` and `# diagnosis:` headers, written before
    it was graded) and `correct/`; None when it has none."""
    folder = _CORPUS_FOLDERS.get(name, SUBMISSIONS / name)
    return folder if (folder / "wrong").is_dir() else None


def corpus_files(name: str) -> tuple[list[Path], list[Path]]:
    """(wrong, correct) submissions of an assignment's corpus (empty lists without one)."""
    folder = corpus_of(name)
    if folder is None:
        return [], []
    return sorted((folder / "wrong").glob("*.py")), sorted((folder / "correct").glob("*.py"))


def losing_submission(name: str) -> Path:
    """A submission that loses points: the assignment's first planted mistake, else its
    template (not attempted anywhere)."""
    from autograder.model.assignment import load_assignment

    wrong = corpus_files(name)[0]
    return wrong[0] if wrong else load_assignment(name).template


def autograded_scores(result) -> dict[str, tuple[float, float]]:
    """{question: (score, max score)} of a result's autograded questions."""
    return {qid: (q.score, q.max_score) for qid, q in result.questions.items()}


# Surfaces on which a dedicated test module already runs an assignment end to end, with more
# assertions than the tests over every assignment make: those leave that assignment to it
# (running it twice would only cost the suite's time). An assignment dropped into assignments/
# is in none of these, so every surface runs on it.
TESTED_ELSEWHERE: dict[str, dict[str, str]] = {
    "bundle check": {"attention": "build/test_build.py", "attention_numpy": "test_numpy_track.py"},
    "notebook": {"attention": "authoring/test_notebook.py",
                 "attention_numpy": "test_numpy_track.py"},
    "gradescope": {"attention": "build/test_build.py"},
    "classroom50": {"attention": "platforms/test_classroom50.py"},
    "actions": {"attention": "platforms/test_actions.py",
                "attention_numpy": "test_numpy_track.py"},
    "otter": {"attention": "build/test_build.py"},
    "written answers": {"attention": "written/test_written_class.py"},
    "similarity": {"attention": "course/test_similarity_reading.py"},
}


def assignments_for(surface: str) -> list[str]:
    """The assignments the tests over every assignment run `surface` on."""
    return [n for n in assignment_names() if n not in TESTED_ELSEWHERE[surface]]


def examples_of(name: str) -> Path | None:
    """An assignment's example class (`assignments/<name>/examples/`), or None."""
    folder = ROOT / "assignments" / name / "examples"
    return folder if folder.is_dir() and any(folder.glob("*.py")) else None


def autograded(questions: dict) -> dict:
    """A grades.json row's questions without the written ones."""
    return {k: v for k, v in questions.items()
            if not (isinstance(v, dict) and v.get("kind") == "written")}


def read_header(path: Path) -> dict[str, str]:
    """`# key: value` lines at the top of a corpus file."""
    header = {}
    for line in path.read_text().splitlines():
        m = re.match(r"#\s*(\w+):\s*(.*)", line)
        if not m:
            break
        header[m.group(1)] = m.group(2).strip()
    return header


def id_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def assert_loses_and_keeps(result, header: dict, questions: list[str]) -> list[str]:
    """A corpus file loses points on exactly its `loses` questions, with readable feedback;
    returns those question ids."""
    loses, keeps = id_list(header["loses"]), id_list(header["keeps"])
    assert sorted(loses + keeps) == sorted(questions)
    for qid in keeps:
        q = result.questions[qid]
        assert q.status == "passed", f"{qid} should keep full marks: {question_feedback(q)}"
    for qid in loses:
        q = result.questions[qid]
        assert q.score < q.max_score, f"{qid} should lose points ({header['mistake']})"
        text = question_feedback(q)
        assert text and "Traceback" not in text and "autograder/" not in text
    return loses


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None,
            timeout: int = 600, extra_groups: list[int] | None = None
            ) -> subprocess.CompletedProcess:
    """`autograder ARGS` as a subprocess; `extra_groups` (root only): the supplementary groups
    it runs with."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          extra_groups=extra_groups)


def load_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def snapshot_differences(got, want, table: dict | None = None, path: str = "",
                         tol: tuple | None = None) -> list[str]:
    """Where a fresh recording (`got`) and a committed snapshot (`want`) differ: structure,
    dtypes, shapes and non-float values exactly; float data within what `autograder snapshot`
    keeps (a tenth of the question's tolerance for that dtype, `table` the question's
    tolerance table, plus half a rounding step): float sums differ between CPUs, a stale
    snapshot (a changed reference or case) by far more, or in structure."""
    import math

    from autograder.authoring.snapshots import KEEP_FRACTION, STEP_FRACTION, _tolerance

    if isinstance(got, dict) and isinstance(want, dict):
        if set(got) != set(want):
            return [f"{path}: keys {sorted(got)} != {sorted(want)}"]
        if str(got.get("dtype", "")).startswith(("float", "complex")):
            rtol, atol = _tolerance(table or {}, str(got["dtype"]).replace("complex128",
                                    "float64").replace("complex64", "float32"))
            scale = KEEP_FRACTION + STEP_FRACTION / 2
            tol = (rtol * scale, atol * scale)
        out: list[str] = []
        for k in got:
            out += snapshot_differences(got[k], want[k], table, f"{path}/{k}", tol)
        return out
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{path}: length {len(got)} != {len(want)}"]
        out = []
        for i, (g, w) in enumerate(zip(got, want)):
            out += snapshot_differences(g, w, table, f"{path}[{i}]", tol)
        return out
    if isinstance(got, float) and isinstance(want, float) and tol:
        if math.isclose(got, want, rel_tol=tol[0], abs_tol=tol[1]):
            return []
        return [f"{path}: {got!r} != {want!r}"]
    if type(got) is not type(want) or got != want:
        return [f"{path}: {got!r} != {want!r}"]
    return []


def copy_assignment(dest: Path, name: str = "attention", extra_toml: str = "") -> Path:
    """A copy of an assignment folder at `dest` (its example class left out), its
    project-relative template, reference and model answers made absolute, `extra_toml`
    appended to its assignment.toml: for tests that change an assignment without touching the
    real one."""
    import shutil

    shutil.copytree(ROOT / "assignments" / name, dest,
                    ignore=shutil.ignore_patterns("__pycache__", "examples"))
    toml = (dest / "assignment.toml").read_text()
    for key in ("template", "reference", "written_answers"):
        toml = re.sub(rf'^{key} = "(.*)"$', lambda m: f'{key} = "{ROOT / m.group(1)}"', toml,
                      count=1, flags=re.M)
    (dest / "assignment.toml").write_text(toml + extra_toml)
    return dest


def flag_only_assignment(folder: Path, name: str = "attention") -> Path:
    """A copy of an assignment whose integrity policy only flags (`on_tamper = "flag"`), for
    tests of the sandbox itself: their probes use ctypes (System V shared memory, prctl), which
    the source scan rightly flags, and the sandbox's own verdict must show through."""
    dest = Path(folder) / f"{name}-flag-only"
    if not dest.exists():
        copy_assignment(dest, name, '\n[integrity]\non_tamper = "flag"\n')
    return dest


def run_workflow_step(script: str, repo: Path, tmp_path: Path, env: dict | None = None,
                      timeout: int = 600) -> subprocess.CompletedProcess:
    """A `run:` script of the generated workflow, run by bash in the checkout as the runner
    runs it: the cached venv's python (a stand-in for this interpreter under $HOME), and
    RUNNER_TEMP; PYTHONPATH unset, as on a runner."""
    home = tmp_path / "home"
    venv_bin = home / ".grader-venv" / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    (venv_bin / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (venv_bin / "python").chmod(0o755)
    (tmp_path / "runner_temp").mkdir(exist_ok=True)
    full_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    full_env.update(HOME=str(home), RUNNER_TEMP=str(tmp_path / "runner_temp"), **(env or {}))
    return subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ what belongs to this run
# Other checkouts may run the same suite on the same machine at the same time: their sandbox
# users, IPC objects and hostile files look exactly like ours. Tests that look for leftovers
# therefore look only at this run's own: processes descended from the test process (conftest
# makes it a subreaper, so an escaped orphan is reparented to it, not to init), and files and
# IPC keys named with RUN_TOKEN.
RUN_TOKEN = f"{os.getpid()}r{os.urandom(3).hex()}"
# System V IPC keys of this run: a block of 4096 from a random base (keys are 32-bit; 0 is
# IPC_PRIVATE, never used as a run key).
_RUN_KEY_BASE = 0x10000000 + int.from_bytes(os.urandom(3), "big") * 0x40


def run_ipc_key(n: int = 0) -> int:
    """The `n`-th System V key of this run (0 <= n < 64)."""
    assert 0 <= n < 0x40
    return _RUN_KEY_BASE + n


def own_processes() -> list[dict]:
    """Live processes descended from this test process: pid, uid, state and command line.
    Zombies are left out (they run nothing; the subreaper holds them until it exits)."""
    from autograder.sandbox.procfs import descendants

    found = []
    for pid in descendants(os.getpid()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            uid = int(next(line.split()[1] for line in
                           Path(f"/proc/{pid}/status").read_text().splitlines()
                           if line.startswith("Uid:")))
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace").strip()
        except (OSError, StopIteration, ValueError):
            continue    # ended while being read
        state = stat.rsplit(")", 1)[1].split()[0]
        if state not in ("Z", "X"):
            found.append({"pid": pid, "uid": uid, "state": state, "args": args})
    return found


def settled(probe, polls: int = 100, pause: float = 0.1):
    """`probe()` once it returns something falsy, or its last value after `polls` tries: for
    processes that were killed and may take a moment to be gone."""
    import time

    value = probe()
    for _ in range(polls):
        if not value:
            return value
        time.sleep(pause)
        value = probe()
    return value


# ------------------------------------------------------------------ sandbox levels
LEVELS = ("namespaces", "user", "rlimits")


def level_expected_here(level: str) -> str | None:
    """Why `level` cannot work on this machine, or None where it must: `namespaces` wherever
    bubblewrap is installed and the tests run as root (as non-root it needs unprivileged user
    namespaces, which some systems block), `user` as root, `rlimits` everywhere."""
    import shutil

    root = os.geteuid() == 0
    if level == "namespaces":
        if not shutil.which("bwrap"):
            return "bubblewrap is not installed (`make system-deps` installs it)"
        if not root:
            return "bubblewrap as non-root needs unprivileged user namespaces"
    elif level == "user" and not root:
        return "the `user` level drops from root to a sandbox user: the tests do not run as root"
    return None


def require_level(level: str) -> None:
    """Skip, saying why, where `level` is impossible here; fail where it should work but does
    not (a broken bubblewrap must not turn the strongest level's tests into skips)."""
    import pytest

    from autograder.sandbox import choose_level

    impossible = level_expected_here(level)
    try:
        choose_level(level)
    except Exception as e:   # noqa: BLE001 - SandboxError says what is missing
        if impossible is None:
            pytest.fail(f"the {level} sandbox level should be available here but is not: {e}")
        pytest.skip(f"the {level} sandbox level is impossible here: {impossible}")


# ------------------------------------------------------------------ one sandbox per test process
# Starting a sandbox starts a fork server that imports torch (about 2 s of CPU, waited for).
# The `sandbox` fixture and every grading run in this process that asks for the same level
# share one; the tests of starting and stopping sandboxes make their own (`Sandbox(...)`), and
# grading processes of `--jobs N` start theirs in their own interpreters as always.

_SESSION: dict = {}


def session_sandbox():
    """This test process's sandbox at the strongest level here, started on first use; started
    again if its fork server has ended (a test that kills it spoils no later test)."""
    from autograder.sandbox.client import Sandbox

    current = _SESSION.get("sandbox")
    if current is None or current.proc.poll() is not None:
        current = _SESSION["sandbox"] = Sandbox("auto")
    return current


def close_session_sandbox() -> None:
    current = _SESSION.pop("sandbox", None)
    if current is not None:
        current.close()


class _Lent:
    """The session's sandbox lent to one grading run: closing it gives it back."""

    def __init__(self, sandbox):
        self._sandbox = sandbox

    def __getattr__(self, name: str):
        return getattr(self._sandbox, name)

    def close(self) -> None:
        from autograder.sandbox import SandboxError

        try:
            self._sandbox._drain()     # the run's last workers answered, as a real close does
        except (SandboxError, OSError, ValueError):
            pass                       # a broken one is replaced at the next `session_sandbox`


@contextlib.contextmanager
def lent_sandbox():
    """Within it, a grading run in this process (`grade_class`, `autograder grade` through
    `cli_in_process`) that asks for the session sandbox's level with the default options gets
    the session's, instead of starting a fork server of its own."""
    import autograder.sandbox as package
    from autograder.sandbox.client import Sandbox
    from autograder.sandbox.levels import choose_level

    def sandbox(level: str = "auto", slot: int = 0, wait: bool = True,
                pid_namespaces: bool = True, worker_namespaces: bool = True,
                share_torch: bool = False):
        shared = session_sandbox()
        if pid_namespaces and worker_namespaces and not share_torch and slot == 0 \
                and choose_level(level) == shared.level:
            return _Lent(shared)
        return Sandbox(level, slot=slot, wait=wait, pid_namespaces=pid_namespaces,
                       worker_namespaces=worker_namespaces, share_torch=share_torch)

    saved = package.Sandbox
    package.Sandbox = sandbox
    try:
        yield
    finally:
        package.Sandbox = saved


def cli_in_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`autograder ARGS` run by this test process (`cli.main`), for tests that are not about
    the command's own process: the same code path as `run_cli` without an interpreter's
    start-up and torch's import (seconds each), and with the session's sandbox lent to it
    (`lent_sandbox`) rather than a fork server of its own. Its output is captured as run_cli
    captures it: what this process prints, and what any process it starts writes to its
    stdout and stderr (file descriptors 1 and 2 point at files meanwhile)."""
    import io
    import tempfile

    from autograder.cli import main

    out, err = io.StringIO(), io.StringIO()
    with tempfile.TemporaryFile() as fd_out, tempfile.TemporaryFile() as fd_err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(fd_out.fileno(), 1)
        os.dup2(fd_err.fileno(), 2)
        try:
            with contextlib.chdir(cwd or ROOT), contextlib.redirect_stdout(out), \
                    contextlib.redirect_stderr(err), lent_sandbox():
                try:
                    code = main(list(args))
                except SystemExit as e:     # argparse's errors
                    code = e.code if isinstance(e.code, int) else 1
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        fd_out.seek(0)
        fd_err.seek(0)
        more_out = fd_out.read().decode("utf-8", "replace")
        more_err = fd_err.read().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["autograder", *args], code, out.getvalue() + more_out,
                                       err.getvalue() + more_err)


# A git that reads no configuration of this machine, with the dates a test sets.
def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    if date:
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = date
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com",
                           "-c", "init.defaultBranch=main", *args], cwd=repo, env=env,
                          check=True, capture_output=True, text=True).stdout


def make_repo(root: Path, name: str, commits: list[tuple[Path, str]]) -> Path:
    """A git repository `root/name` whose history commits each source as attention.py at the
    committer (and author) date given."""
    import shutil

    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    for source, date in commits:
        shutil.copy(source, repo / "attention.py")
        git(repo, "add", "attention.py")
        git(repo, "commit", "-q", "-m", "work", date=date)
    return repo


# ------------------------------------------------------------------ expected points, derived
# Tests that pin a partial score derive it from the question files (which cases call which of
# the student's functions, and their points) rather than copying today's output.

class Case(NamedTuple):
    name: str
    points: float
    functions: frozenset      # the student's functions the case is given
    hidden: bool


def cases_of(qid: str, assignment: str = "attention") -> list[Case]:
    """Each case of a question, in the order they run, as otter reads the question file."""
    import inspect

    from autograder.model.assignment import load_assignment
    from autograder.grading.runner import load_question_file

    test_file = load_question_file(str(load_assignment(assignment).question(qid).test_file))
    return [Case(tc.name, float(tc.points or 0),
                 frozenset(inspect.signature(tc.body.test_func).parameters), bool(tc.hidden))
            for tc in test_file.test_cases]


def points_without(qid: str, broken: set[str], assignment: str = "attention") -> float:
    """What a question gives when every case given one of the `broken` functions fails and
    the rest pass."""
    return sum(c.points for c in cases_of(qid, assignment) if not c.functions & set(broken))


def points_before(qid: str, broken: set[str], assignment: str = "attention") -> float:
    """What a question gives when the first case given a `broken` function ends the question
    (a timeout or a killed worker: the cases after it are not run)."""
    total = 0.0
    for c in cases_of(qid, assignment):
        if c.functions & set(broken):
            break
        total += c.points
    return total


def max_points(qid: str, assignment: str = "attention") -> float:
    return sum(c.points for c in cases_of(qid, assignment))
