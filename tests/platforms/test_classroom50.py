"""Classroom 50: the folder `autograder build` writes, run as its runner runs it (`python
autograder.py` in a student's checkout, with the runner's environment and the bundle folder),
and the `result.json` it writes checked against the `classroom50/result/v1` schema."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from helpers import QUESTIONS, SUBMISSIONS, WRITTEN_MAX, autograded, run_cli
from hostile_names import (FORMAT_ANSWER, FORMAT_MESSAGE_SHOWN, FORMAT_RAISE, FORMAT_RAW,
                           forger_source)
from autograder.feedback.contract import submission_json

NAME = "attention"

# classroom50/result/v1 as the schema in foundation50/classroom50 states it (required fields,
# types, whole numbers, `submit/` tags, UTC stamps, no other top-level field); the cross-field
# rules it leaves to code (score <= max-score, sums) are checked in `check_result`.
STAMP = r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$"
RESULT_V1 = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema", "classroom", "assignment", "assignment_type", "owner", "submission",
                 "commit", "release", "review", "datetime", "score", "max-score", "tests"],
    "properties": {
        "schema": {"const": "classroom50/result/v1"},
        "classroom": {"type": "string", "minLength": 1},
        "assignment": {"type": "string", "minLength": 1},
        "assignment_type": {"enum": ["individual", "group"]},
        "owner": {"type": "string", "minLength": 1},
        "submission": {"type": "string", "pattern": "^submit/"},
        "commit": {"type": "string", "minLength": 1},
        "release": {"type": "string", "minLength": 1},
        "review": {"type": "string", "minLength": 1},
        "datetime": {"type": "string", "pattern": STAMP},
        "graded_at": {"type": "string", "pattern": STAMP},
        "score": {"type": "integer", "minimum": 0},
        "max-score": {"type": "integer", "minimum": 0},
        "tests": {"type": "array", "items": {
            "type": "object",
            "additionalProperties": True,
            "required": ["test-name", "passed", "score", "max-score"],
            "properties": {"test-name": {"type": "string", "minLength": 1},
                           "passed": {"type": "boolean"},
                           "score": {"type": "integer", "minimum": 0},
                           "max-score": {"type": "integer", "minimum": 0}}}},
        "submitted_by": {"type": "object", "required": ["username"]},
    },
}

ENV = {"CLASSROOM": "tfm-2026", "ASSIGNMENT": "attention", "SUBMISSION_TAG":
       "submit/20261130T010203Z-abc1234", "COMMIT_URL": "https://github.com/o/r/commit/abc",
       "RELEASE_URL": "https://github.com/o/r/releases/tag/submit%2F1",
       "REVIEW_URL": "https://github.com/o/r/compare/a...b", "USERNAME": "student1",
       "OWNER": "student1", "ASSIGNMENT_TYPE": "individual"}


def check_result(doc: dict, *, public: bool = True) -> None:
    """Schema-valid, one row per question; from the public folder each row's name says it is
    the public cases (and, where a question has hidden cases, that they are graded later)."""
    jsonschema.validate(doc, RESULT_V1)
    names = [t["test-name"] for t in doc["tests"]]
    if public:
        assert [n.split(" (public cases", 1)[0] for n in names] == QUESTIONS, names
        assert all("(public cases" in n for n in names)
    else:
        assert names == QUESTIONS
    for t in doc["tests"]:
        assert t["score"] <= t["max-score"]
        assert t["passed"] == (t["score"] == t["max-score"] and t["status"] == "passed")
    assert doc["score"] == sum(t["score"] for t in doc["tests"]) <= doc["max-score"]
    assert doc["max-score"] == sum(t["max-score"] for t in doc["tests"]) > 0
    assert doc["owner"] == "student1" and doc["submission"] == ENV["SUBMISSION_TAG"]


@pytest.fixture(scope="module")
def bundle(built):
    return built / f"{NAME}-classroom50"         # built once for the suite (conftest.py)


def checkout(tmp_path: Path, submission: Path | None) -> Path:
    """A student's repository: a git checkout holding their file."""
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    if submission is not None:
        shutil.copy(submission, repo / "attention.py")
    git = ["git", "-c", "user.name=s", "-c", "user.email=s@example.org", "-C", str(repo)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "work"], check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": "2026-11-29T23:59:58+01:00"})
    subprocess.run(git + ["add", "-A"], check=True)
    return repo


def run_autograder(bundle: Path, repo: Path, install: bool = False,
                   **extra: str) -> subprocess.CompletedProcess:
    """As the runner does: `sys.executable autograder.py` in the checkout, bundle elsewhere.
    The runner's own folder is not on the path: this interpreter's packages are (no install,
    unless `install`)."""
    runtime = repo.parent / "runtime" / "attention"
    if not runtime.exists():
        shutil.copytree(bundle, runtime)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "CLASSROOM50_NO_INSTALL")}
    env.update(ENV, CLASSROOM50_BUNDLE_DIR=str(runtime), **extra)
    if not install:
        env["CLASSROOM50_NO_INSTALL"] = "1"
    return subprocess.run([sys.executable, str(runtime / "autograder.py")], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)


def graded(bundle: Path, tmp_path: Path, submission: Path | None) -> tuple[dict, str, str]:
    repo = checkout(tmp_path, submission)
    r = run_autograder(bundle, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to install" in r.stdout
    doc = json.loads((repo / "result.json").read_text())
    check_result(doc)
    return doc, (repo / "release-body.md").read_text(), r.stdout


@pytest.fixture(scope="module")
def graded_once(bundle, tmp_path_factory):
    """`graded` of a submission, run once for the tests of this module that read the same run
    (each reads, none changes, what the run wrote)."""
    runs: dict[Path, tuple[dict, str, str]] = {}

    def get(submission: Path) -> tuple[dict, str, str]:
        if submission not in runs:
            runs[submission] = graded(bundle, tmp_path_factory.mktemp("c50-" + submission.stem),
                                      submission)
        return runs[submission]
    return get


CORRECT = SUBMISSIONS / "correct" / "einsum_style.py"
MASK_IGNORED = SUBMISSIONS / "wrong" / "mask_ignored.py"


def test_correct_submission_gets_every_point(graded_once):
    doc, body, _ = graded_once(CORRECT)
    assert doc["score"] == doc["max-score"] and all(t["passed"] for t in doc["tests"])
    # The graded commit's committer date, in UTC.
    assert doc["datetime"] == "2026-11-29T22:59:58Z"
    assert f"{doc['score']} / {doc['max-score']} points" in body


def test_public_points_say_they_are_not_the_grade(graded_once, corpus_results):
    """Full marks from the public folder are the public cases' points: the Release, result.json's
    rows and the terminal say so, with the hidden cases' points and the full total
    recorded at build time, as grading on every case counts them (the suite's grading of the
    correct corpus, `autograder grade`'s rows)."""
    doc, body, stdout = graded_once(CORRECT)
    full = submission_json(corpus_results[CORRECT.name])
    most = full["max_score"] - WRITTEN_MAX      # the written questions: by hand, later
    hidden = most - doc["max-score"]
    assert hidden > 0
    later = (f"worth {hidden:g} more points, and the written questions, worth "
             f"{WRITTEN_MAX:g} (graded by hand), are graded later: the grade is out of "
             f"{full['max_score']:g} in all ({most:g} autograded, {WRITTEN_MAX:g} written "
             "and graded by hand)")
    first = body.splitlines()[0]
    assert first.endswith(f"{doc['score']} / {doc['max-score']} points on the public cases")
    assert later in body and later in stdout
    assert f"**Total:" not in body and f"**Public cases: {doc['score']} / " in body
    rows = {t["test-name"].split(" ", 1)[0]: t["test-name"] for t in doc["tests"]}
    for qid, q in autograded(full["questions"]).items():
        row = next(t for t in doc["tests"] if t["test-name"] == rows[qid])
        extra = q["max_score"] - row["max-score"]
        assert rows[qid] == (f"{qid} (public cases; {extra:g} more points in hidden cases, "
                             "graded later)" if extra else f"{qid} (public cases)")


def test_relative_bundle_folder_is_the_callers(bundle, tmp_path):
    """The README's try-it command, with the bundle folder given relative to the checkout,
    grades with the bundle's own engine; a folder that is not the bundle gets one line."""
    repo = checkout(tmp_path, SUBMISSIONS / "wrong" / "mask_ignored.py")
    runtime = tmp_path / "dist" / "attention-classroom50"
    shutil.copytree(bundle, runtime)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    rel = os.path.relpath(runtime, repo)
    env.update(ENV, CLASSROOM50_BUNDLE_DIR=rel, CLASSROOM50_NO_INSTALL="1")
    r = subprocess.run([sys.executable, os.path.join(rel, "autograder.py")], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    check_result(json.loads((repo / "result.json").read_text()))
    for bad in ("nowhere", str(tmp_path)):
        env["CLASSROOM50_BUNDLE_DIR"] = bad
        r = subprocess.run([sys.executable, str(runtime / "autograder.py")], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 2
        lines = (r.stdout + r.stderr).strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in lines[0], lines
        assert f"CLASSROOM50_BUNDLE_DIR={bad}" in lines[0] and "not the grader's folder" in lines[0]


def test_wrong_submission_gets_partial_credit_and_feedback(graded_once, grade):
    doc, body, _ = graded_once(MASK_IGNORED)
    rows = {t["test-name"].split(" ", 1)[0]: t for t in doc["tests"]}
    assert 0 < doc["score"] < doc["max-score"]
    assert 0 < rows["mask"]["score"] < rows["mask"]["max-score"]
    assert "blocked positions" in rows["mask"]["output"] and "blocked positions" in body
    # Same points as the sandboxed grader on the same public cases (`grade --public-only`).
    ref = grade(MASK_IGNORED, include_hidden=False)
    assert doc["score"] == ref.score and doc["max-score"] == ref.max_score - WRITTEN_MAX


@pytest.mark.parametrize("name", ["syntax_error.py", None])
def test_broken_or_missing_file_is_a_row_of_failures_not_an_error(bundle, tmp_path, name):
    doc, body, _ = graded(bundle, tmp_path, SUBMISSIONS / "broken" / name if name else None)
    assert doc["score"] == 0 and not any(t["passed"] for t in doc["tests"])
    assert ("SyntaxError" in body or "syntax" in body.lower()) if name else "not found" in body


def test_printing_submission_cannot_forge_the_result(bundle, tmp_path):
    doc, body, stdout = graded(bundle, tmp_path,
                               SUBMISSIONS / "hostile" / "fake_score_output.py")
    assert doc["score"] == 0
    text = json.dumps(doc) + body + stdout
    assert "100/100" not in text and '"score": 100' not in text


def test_missing_requirement_is_said_and_not_silently_installed(bundle, tmp_path):
    repo = checkout(tmp_path, SUBMISSIONS / "correct" / "einsum_style.py")
    runtime = tmp_path / "runtime" / "attention"
    shutil.copytree(bundle, runtime)
    reqs = runtime / "requirements.txt"
    reqs.write_text(reqs.read_text() + "numpy>=999\n")
    r = run_autograder(bundle, repo)
    assert r.returncode == 2
    assert "installing is switched off: numpy>=999" in r.stdout
    assert "torch" not in r.stdout.split("switched off:")[1]   # torch is there: not listed
    assert not (repo / "result.json").exists()


def _wheel(folder: Path, name: str, version: str) -> Path:
    """A pure-Python wheel of an empty package, made here: what a runner's wheel folder holds."""
    import base64
    import hashlib
    import zipfile

    mod, info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    files = {f"{mod}/__init__.py": f"VERSION = {version!r}\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = [f"{path},sha256={digest(text)},{len(text.encode())}"
              for path, text in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = "\n".join(record) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def test_what_is_missing_is_installed_and_the_rest_is_reused(bundle, tmp_path):
    """Without CLASSROOM50_NO_INSTALL, as on a runner: a requirement the runner's Python lacks
    is installed into a virtual environment in RUNNER_TEMP that sees the packages already there
    (torch is not installed again), and the submission is then graded. Offline: pip takes the
    missing package from a wheel folder (pip's own PIP_NO_INDEX and PIP_FIND_LINKS, as a
    runner with a wheelhouse is set up)."""
    repo = checkout(tmp_path, SUBMISSIONS / "correct" / "einsum_style.py")
    runtime = tmp_path / "runtime" / "attention"
    shutil.copytree(bundle, runtime)
    reqs = runtime / "requirements.txt"
    reqs.write_text(reqs.read_text() + "c50-wheelhouse-probe>=1.0\n")
    wheels = _wheel(tmp_path / "wheels", "c50-wheelhouse-probe", "1.2").parent
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir()
    r = run_autograder(bundle, repo, install=True, RUNNER_TEMP=str(runner_temp),
                       PIP_NO_INDEX="1", PIP_FIND_LINKS=str(wheels))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "autograder.py: installing c50-wheelhouse-probe>=1.0\n" in r.stdout
    assert "nothing to install" not in r.stdout and "torch" not in r.stdout
    venv = runner_temp / "autograder-venv"
    own = subprocess.run([str(venv / "bin" / "python"), "-I", "-c",
                          "import c50_wheelhouse_probe as p, torch, sysconfig; "
                          "print(p.VERSION, torch.__file__.startswith("
                          "sysconfig.get_paths()['purelib']))"],
                         capture_output=True, text=True, timeout=300)
    assert own.stdout.split() == ["1.2", "False"], own.stdout + own.stderr   # torch reused
    doc = json.loads((repo / "result.json").read_text())
    check_result(doc)
    assert doc["score"] == doc["max-score"]


def test_public_folder_has_no_hidden_case_unless_asked(bundle, graded_once, tmp_path):
    from autograder.platforms.build import case_visibility

    def hidden_cases(folder: Path) -> int:
        return sum(sum(case_visibility(f.read_text()).values())
                   for f in (folder / "assignments" / NAME / "tests").glob("*.py"))

    assert hidden_cases(bundle) == 0
    assert not (bundle / "assignments" / NAME / "reference").exists()
    assert "Public cases only" in (bundle / "README.md").read_text()
    r = run_cli("build", "-a", NAME, "--out", str(tmp_path), "--no-otter",
                "--classroom50-hidden")
    assert r.returncode == 0, r.stderr
    assert "anyone can download" in r.stderr
    full = tmp_path / f"{NAME}-classroom50"
    assert hidden_cases(full) > 0 and (full / "assignments" / NAME / "reference").is_dir()
    assert "Warning: hidden cases" in (full / "README.md").read_text()
    # With the reference there, the mistake catalogue names the mistake on the Release.
    repo = checkout(tmp_path, MASK_IGNORED)
    r = run_autograder(full, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((repo / "result.json").read_text())
    check_result(doc, public=False)
    assert "public cases" not in (repo / "release-body.md").read_text()   # every case is here
    public, _, _ = graded_once(MASK_IGNORED)
    assert doc["max-score"] > public["max-score"]
    assert "likely mistake: the mask is never applied" in (repo / "release-body.md").read_text()


def test_result_uses_whole_points():
    from autograder.platforms.classroom50.run import whole_points

    assert whole_points(2.5, 3) == (2, 3)
    assert whole_points(3, 3) == (3, 3)
    assert whole_points(2.99, 3) == (2, 3)
    assert whole_points(0.1 * 3 + 2.7, 3) == (3, 3)   # float noise in a sum of case points
    assert whole_points(4, 3) == (3, 3)


def test_modules_committed_in_the_checkout_are_never_imported(bundle, tmp_path):
    """The runner's working directory is the student's checkout: modules there named like the
    ones autograder.py and the grader import must not run (they would forge result.json)."""
    repo = checkout(tmp_path, SUBMISSIONS / "wrong" / "mask_ignored.py")
    forge = ("import json as _j, pathlib as _p\n"
             "_p.Path(r'{marker}').write_text('imported')\n")
    marker = tmp_path / "forged"
    for name in ("json", "re", "venv", "subprocess", "sitecustomize", "importlib", "secrets",
                 "argparse", "torch", "numpy"):
        (repo / f"{name}.py").write_text(forge.format(marker=marker))
    fake = repo / "autograder"
    fake.mkdir()
    (fake / "__init__.py").write_text(forge.format(marker=marker))
    (fake / "platforms").mkdir()
    (fake / "platforms" / "__init__.py").write_text(forge.format(marker=marker))
    (fake / "platforms" / "classroom50").mkdir()
    for name in ("__init__.py", "__main__.py", "run.py"):
        (fake / "platforms" / "classroom50" / name).write_text(forge.format(marker=marker))
    r = run_autograder(bundle, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not marker.exists()
    doc = json.loads((repo / "result.json").read_text())
    check_result(doc)
    assert 0 < doc["score"] < doc["max-score"]


def test_the_notebook_is_graded_when_the_py_is_still_the_template(assignment, tmp_path):
    from autograder.platforms.checkout import choose_submission

    py, nb = tmp_path / "attention.py", tmp_path / "attention.ipynb"
    assert choose_submission(assignment, tmp_path) == py          # neither: the .py is missing
    nb.write_text("{}")
    assert choose_submission(assignment, tmp_path) == nb          # only the notebook
    shutil.copy(assignment.template, py)
    assert choose_submission(assignment, tmp_path) == nb          # the .py is untouched
    py.write_text(py.read_text() + "\n# started\n")
    assert choose_submission(assignment, tmp_path) == py          # the .py was worked on
    py.unlink()
    py.symlink_to(assignment.template)
    assert choose_submission(assignment, tmp_path) == py          # a link is graded (refused)


def test_committed_links_are_replaced_never_written_through(bundle, tmp_path):
    """result.json and release-body.md committed as links to files outside the checkout (and
    a link to a folder): the grader replaces the links with its own files and leaves every
    target as it was."""
    repo = checkout(tmp_path, SUBMISSIONS / "wrong" / "mask_ignored.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.json"
    victim.write_text("the runner's own file\n")
    (repo / "result.json").symlink_to(victim)
    (repo / "release-body.md").symlink_to(outside)          # a folder: written into, once
    r = run_autograder(bundle, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert victim.read_text() == "the runner's own file\n"
    assert sorted(p.name for p in outside.iterdir()) == ["victim.json"]
    for name in ("result.json", "release-body.md"):
        assert not (repo / name).is_symlink() and (repo / name).is_file()
    check_result(json.loads((repo / "result.json").read_text()))
    assert "mask" in (repo / "release-body.md").read_text()
    assert not [p for p in repo.iterdir() if p.name.endswith(".tmp")]   # no temporary left


@pytest.mark.parametrize("before", ["link", "dangling", "folder", "file", "none"])
def test_replace_file_never_follows(tmp_path, before):
    from autograder.platforms.outputs import replace_file

    folder, victim = tmp_path / "checkout", tmp_path / "victim"
    folder.mkdir()
    victim.write_text("keep")
    target = folder / "result.json"
    if before == "link":
        target.symlink_to(victim)
    elif before == "dangling":
        target.symlink_to(tmp_path / "made-through-the-link")
    elif before == "folder":
        target.mkdir()
        (target / "inner").symlink_to(victim)
    elif before == "file":
        target.write_text("old")
    replace_file(folder, "result.json", b"{}")
    assert target.read_bytes() == b"{}" and not target.is_symlink()
    assert victim.read_text() == "keep" and not (tmp_path / "made-through-the-link").exists()
    assert sorted(p.name for p in folder.iterdir()) == ["result.json"]
    with pytest.raises(ValueError):
        replace_file(folder, "../x", b"")


def test_release_text_and_rows_name_the_likely_mistake(graded_once):
    """A wrong submission's Release text and its result.json row name the mistake, from the
    public folder alone (no reference, no catalogue: Classroom 50 serves it publicly)."""
    doc, body, _ = graded_once(SUBMISSIONS / "wrong" / "attention_divides_by_dk.py")
    rows = {t["test-name"].split(" ", 1)[0]: t for t in doc["tests"]}
    assert "likely mistake: scores divided by d_k instead of sqrt(d_k)" in \
        rows["attention"]["output"]
    assert "likely mistake: scores divided by d" in body
    assert "likely mistake" not in rows["softmax"].get("output", "")


def _strings(value) -> str:
    """Every string of a JSON value, joined: what a platform shows of it."""
    if isinstance(value, dict):
        return "\n".join(_strings(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_strings(v) for v in value)
    return value if isinstance(value, str) else ""


def test_format_characters_show_as_codes(bundle, tmp_path):
    """A message with a right-to-left override and other format characters shows each as a
    code (`<U+202E>`) in result.json's rows, the Release's text and the log."""
    sub = tmp_path / "cf.py"
    sub.write_text(forger_source(FORMAT_RAISE) + f"\nwhy_scale = {FORMAT_ANSWER!r}\n")
    doc, body, stdout = graded(bundle, tmp_path, sub)
    rows = _strings(doc["tests"])
    for text in (rows, body, stdout):
        assert not set(text) & FORMAT_RAW
    assert FORMAT_MESSAGE_SHOWN in rows
    assert FORMAT_MESSAGE_SHOWN.replace("<", "&lt;").replace(">", "&gt;") in body
