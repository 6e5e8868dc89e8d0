"""`autograder build`: the student bundle, the Gradescope zip and the otter zip."""
import ast
import json
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from otter.test_files.exception_test import ExceptionTestFile

from helpers import (QUESTIONS, ROOT, SUBMISSIONS, cases_of, id_list, load_json, max_points,
                     read_header, run_cli)

from autograder.platforms.build import (GRADER_ONLY_KEYS, GRADER_ONLY_TABLES, BuildError, case_visibility,
                              drop_toml_tables, rewrite_toml, strip_hidden_cases)
from autograder.platforms.gradescope.run import VISIBILITIES, to_gradescope
from autograder.feedback.contract import submission_json

NAME = "attention"


# `built` (conftest.py): `autograder build -a attention`, run once for the whole suite.


def _texts(folder: Path) -> dict[str, str]:
    out = {}
    for f in folder.rglob("*"):
        if f.is_file():
            out[f.relative_to(folder).as_posix()] = f.read_bytes().decode("utf-8", "replace")
    return out


def _reference_lines() -> set[str]:
    """Distinctive lines of the reference's function bodies (and of the mistake catalogue)."""
    lines = set()
    for path in [ROOT / "reference" / "attention.py", ROOT / "assignments" / NAME / "mistakes.py"]:
        if not path.is_file():
            continue
        src = path.read_text()
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if ast.get_docstring(node) else node.body
                for stmt in body:
                    for line in ast.get_source_segment(src, stmt).splitlines():
                        line = line.strip()
                        # Standard-library boilerplate (a warnings filter) is not distinctive:
                        # the engine's own code may say it too.
                        if len(line) >= 24 and not line.startswith(
                                ("#", "raise ", "return (", "with warnings.")):
                            lines.add(line)
    assert len(lines) > 20
    return lines


# ------------------------------------------------------------------ the student bundle

def test_student_bundle_has_no_reference_and_no_hidden_case(built, assignment):
    bundle = built / f"{NAME}-student"
    files = _texts(bundle)
    with zipfile.ZipFile(built / f"{NAME}-student.zip") as zf:
        zipped = {n: zf.read(n).decode("utf-8", "replace") for n in zf.namelist()}
    top = f"{NAME}-student/"
    assert all(n.startswith(top) for n in zipped)     # unzipped, it makes that one folder
    assert {n[len(top):]: text for n, text in zipped.items()} == files   # the zip is the folder
    assert {"README.md", "attention.py", "attention.ipynb", "requirements.txt"} <= set(files)
    assert not any("reference" in Path(f).parts or f.endswith("mistakes.py") for f in files)
    secret = _reference_lines()
    for name, text in files.items():
        if name.endswith(".py"):      # no file defines a hidden case
            assert not any(case_visibility(text, name).values()), name
        if not name.startswith("autograder/"):   # the engine's own code may say the words
            assert "hidden=True" not in text.replace(" ", ""), name
        leaked = [line for line in secret if line in text]
        assert not leaked, (name, leaked[:3])
    toml = files[f"assignments/{NAME}/assignment.toml"]
    assert "reference =" not in toml and "mistakes =" not in toml
    assert "instructor" not in toml.lower() and "[gradescope]" not in toml
    for q in assignment.questions:
        shipped = bundle / "assignments" / NAME / "tests" / q.test_file.name
        tf = ExceptionTestFile.from_file(str(shipped))
        original = ExceptionTestFile.from_file(str(q.test_file))
        assert [tc.name for tc in tf.test_cases] == \
            [tc.name for tc in original.test_cases if not tc.hidden]
        assert not any(tc.hidden for tc in tf.test_cases)
        snap = bundle / "assignments" / NAME / "snapshots" / f"{q.id}.json"
        assert set(json.loads(snap.read_text())) <= set(
            json.loads((assignment.snapshot_dir / f"{q.id}.json").read_text()))
    assert files["attention.py"] == assignment.template.read_text()
    assert files["attention.ipynb"] == (ROOT / "student_template" / "attention.ipynb").read_text()


def test_student_toml_keeps_what_students_use_and_nothing_of_the_graders(built, assignment):
    """Rebuilt from the instructor's file by dropping the grader-only keys and tables (with the
    comments right above them): every other key and value is the instructor's."""
    import tomllib

    text = (built / f"{NAME}-student" / "assignments" / NAME / "assignment.toml").read_text()
    student = tomllib.loads(text)
    expected = {k: v for k, v in assignment.config.items()
                if k not in GRADER_ONLY_KEYS + GRADER_ONLY_TABLES}
    expected["template"] = f"template/{assignment.template.name}"
    # and what the build adds: the hidden cases it cut out, as otter reads the question files
    hidden = {q: [c.points for c in cases_of(q) if c.hidden] for q in QUESTIONS}
    expected["hidden_cases"] = {
        "cases": sum(len(v) for v in hidden.values()),
        "points": sum(sum(v) for v in hidden.values()),
        "max_score": sum(max_points(q) for q in QUESTIONS),
        "points_by_question": {q: sum(v) for q, v in hidden.items()}}
    assert student == expected
    own = text.split("\n[hidden_cases]")[0]       # the build's own table has its own comments
    comments = [line for line in own.splitlines() if line.lstrip().startswith("#")]
    original = (assignment.root / "assignment.toml").read_text()
    assert comments and all(c in original for c in comments)
    assert not any("instructor" in c.lower() or "gradescope" in c.lower() for c in comments)


def test_grader_only_keys_and_tables_leave_with_their_comments():
    text = ('# the assignment\nname = "x"\n# the solution (instructor-only)\nreference = "r.py"\n'
            '\n[outputs]\n# kept\nf = ["a"]\n\n# graders only\n[gradescope] # inline\n'
            '# a comment inside\nhidden_visibility = "hidden"\n\n# the limits\n[limits]\n'
            'question_seconds = 3\n')
    out = drop_toml_tables(rewrite_toml(text, {"reference": None}), ("gradescope",))
    assert out == ('# the assignment\nname = "x"\n\n[outputs]\n# kept\nf = ["a"]\n\n'
                   '# the limits\n[limits]\nquestion_seconds = 3\n')
    last = drop_toml_tables('name = "x"\n\n# gone\n[gradescope]\nx = 1\n', ("gradescope",))
    assert last == 'name = "x"\n'


def test_the_student_zip_unpacks_into_its_folder_and_checks_run_there(built, tmp_path):
    """As a student does: unzip attention-student.zip anywhere, cd into the folder it made,
    run the check."""
    with zipfile.ZipFile(built / f"{NAME}-student.zip") as zf:
        zf.extractall(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f"{NAME}-student"]
    work = tmp_path / f"{NAME}-student"
    shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", work / "attention.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-m", "autograder", "check", "attention.py"], cwd=work,
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0 and "All public checks pass" in r.stdout, r.stdout + r.stderr


def test_build_prints_every_path_the_same_way(tmp_path):
    """Relative to the current folder when inside it, else absolute: one rule for every line."""
    from helpers import cli_in_process

    inside = cli_in_process("build", "-a", "attention_numpy", "--no-otter", cwd=tmp_path)
    assert inside.returncode == 0, inside.stdout + inside.stderr
    paths = dict(line.split(None, 1) for line in inside.stdout.splitlines())
    assert paths == {"student": "dist/attention_numpy-student",
                     "student_zip": "dist/attention_numpy-student.zip",
                     "gradescope": "dist/attention_numpy-gradescope.zip",
                     "classroom50": "dist/attention_numpy-classroom50"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    outside = cli_in_process("build", "-a", "attention_numpy", "--no-otter", "--out",
                             str(tmp_path / "out"), cwd=elsewhere)
    assert outside.returncode == 0, outside.stdout + outside.stderr
    for line in outside.stdout.splitlines():
        kind, path = line.split(None, 1)
        assert Path(path).is_absolute() and Path(path).exists(), line


def test_student_bundle_checks_run_from_snapshots(built, tmp_path):
    bundle = built / f"{NAME}-student"
    work = tmp_path / "bundle"
    shutil.copytree(bundle, work)
    env = {"PYTHONPATH": str(work)}
    r = run_cli("check", "attention.py", cwd=work, env=env)
    assert r.returncode == 1 and r.stdout.count("not attempted") == len(QUESTIONS), r.stdout
    shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", work / "attention.py")
    r = run_cli("check", "attention.py", cwd=work, env=env)
    assert r.returncode == 0 and "All public checks pass" in r.stdout, r.stdout + r.stderr
    # It is the bundle's own engine that ran (no reference anywhere it can see).
    r = subprocess.run([sys.executable, "-c", "import autograder; print(autograder.__file__)"],
                       cwd=work, capture_output=True, text=True, env={**os.environ, **env})
    assert Path(r.stdout.strip()).parent.parent == work


def test_hidden_case_stripping():
    src = ('from otter.test_files import test_case\n\n\n'
           '@test_case(name="a", points=1, hidden=False)\ndef a(f):\n    pass\n\n\n'
           '@test_case("b", 1, True)\ndef b(f):\n    secret = 42\n\n\n'
           '# a comment that stays\n@test_case(name="c", points=1, hidden=True)\n'
           'def c(f):\n    secret = 43\n\n\n@test_case(name="d")\ndef d(f):\n    pass\n')
    assert case_visibility(src) == {"a": False, "b": True, "c": True, "d": False}
    out = strip_hidden_cases(src)
    assert case_visibility(out) == {"a": False, "d": False}
    assert "secret" not in out and "# a comment that stays" in out
    with pytest.raises(BuildError):
        strip_hidden_cases(src.replace("hidden=False", "hidden=HIDE"))


def test_rewrite_toml_keeps_the_rest():
    text = ('# comment\nname = "x"\ntemplate = "a/b.py"\nreference = "r.py"\n\n'
            '[limits]\nreference = 3\n')
    out = rewrite_toml(text, {"template": "template/b.py", "reference": None})
    assert out.startswith("# comment\nname = \"x\"\ntemplate = \"template/b.py\"\n")
    assert 'reference = "r.py"' not in out and "[limits]\nreference = 3" in out


# ------------------------------------------------------------------ Gradescope

def _gradescope_dir(tmp_path: Path, built: Path, submission: Path | None) -> Path:
    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(built / f"{NAME}-gradescope.zip") as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():   # zipfile drops permissions; Gradescope keeps them
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    if submission is not None:
        shutil.copy(submission, root / "submission" / submission.name)
    return root


def _run_autograder(root: Path) -> dict:
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return load_json(root / "results" / "results.json")


def _valid_gradescope(results: dict) -> None:
    assert isinstance(results["score"], float)
    assert results["stdout_visibility"] in VISIBILITIES
    for t in results["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output", "output_format",
                          "visibility"}, t
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] in VISIBILITIES
        assert t["output_format"] in ("text", "html", "simple_format", "md", "ansi")
        assert isinstance(t["score"], float) and isinstance(t["max_score"], float)
        assert 0 <= t["score"] <= t["max_score"]


def test_gradescope_zip_layout(built):
    with zipfile.ZipFile(built / f"{NAME}-gradescope.zip") as zf:
        names = set(zf.namelist())
        setup = zf.read("setup.sh").decode()
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
    assert {"setup.sh", "run_autograder", "requirements.txt", "autograder/grading/grade.py",
            f"assignments/{NAME}/reference/attention.py",
            f"assignments/{NAME}/reference/__init__.py"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
    assert not any(n.startswith(("tests/", "/")) or ".." in n for n in names)


def test_run_autograder_matches_autograder_grade(built, tmp_path, assignment, grade,
                                                 corpus_results):
    picked = [SUBMISSIONS / "wrong" / "block_pre_norm.py",
              SUBMISSIONS / "broken" / "syntax_error.py"]
    # What `autograder grade` writes for each (the same grading, in this process).
    expected = {"block_pre_norm.py": submission_json(corpus_results["block_pre_norm.py"]),
                "syntax_error.py": submission_json(grade(picked[1]))}
    for i, sub in enumerate(picked):
        results = _run_autograder(_gradescope_dir(tmp_path / str(i), built, sub))
        _valid_gradescope(results)
        exp = expected[sub.name]
        assert results["score"] == exp["score"]
        assert [t["name"] for t in results["tests"]] == QUESTIONS
        for t in results["tests"]:
            q = exp["questions"][t["name"]]
            assert (t["score"], t["max_score"]) == (q["score"], q["max_score"])
            assert t["status"] == ("passed" if q["status"] == "passed" else "failed")
            assert t["visibility"] == "after_published"   # every question has hidden cases
        if exp["error"]:
            assert exp["error"] in results["output"]
    assert results["score"] == 0 and "syntax error" in results["output"]


def test_run_autograder_grades_a_notebook_and_handles_nothing_to_grade(built, tmp_path,
                                                                      assignment):
    from autograder.platforms.notebook.build import notebook_text

    nb = tmp_path / "attention.ipynb"
    nb.write_text(notebook_text(assignment,
                                (SUBMISSIONS / "wrong" / "causal_mask_tril.py").read_text()))
    root = _gradescope_dir(tmp_path / "nb", built, nb)
    (root / "submission" / "notes.txt").write_text("not code")
    results = _run_autograder(root)
    _valid_gradescope(results)
    mask = {t["name"]: t for t in results["tests"]}["mask"]
    assert mask["status"] == "failed" and mask["score"] < mask["max_score"]
    assert "mask:" in results["output"]            # the public summary is visible now
    empty = _run_autograder(_gradescope_dir(tmp_path / "empty", built, None))
    _valid_gradescope(empty)
    assert empty["score"] == 0 and "No .py or .ipynb file" in empty["output"]
    assert [t["name"] for t in empty["tests"]] == QUESTIONS


def test_gradescope_shows_format_characters_as_codes(built, tmp_path):
    """A message with a right-to-left override and other format characters shows each as a
    code (`<U+202E>`) in every text results.json gives Gradescope to show."""
    from hostile_names import FORMAT_ANSWER, FORMAT_MESSAGE_SHOWN, FORMAT_RAISE, FORMAT_RAW, \
        forger_source

    sub = tmp_path / "attention.py"
    sub.write_text(forger_source(FORMAT_RAISE) + f"\nwhy_scale = {FORMAT_ANSWER!r}\n")
    results = _run_autograder(_gradescope_dir(tmp_path / "cf", built, sub))
    _valid_gradescope(results)
    shown = [results["output"], *(t["output"] for t in results["tests"])]
    assert not set("\n".join(shown)) & FORMAT_RAW
    softmax = next(t for t in results["tests"] if t["name"] == "softmax")
    assert FORMAT_MESSAGE_SHOWN in softmax["output"]


def test_gradescope_visibility_conversion():
    sub = {"path": "x/attention.py", "score": 3.0, "max_score": 5.0, "error": None,
           "questions": {
               "a": {"score": 2.0, "max_score": 2.0, "status": "passed", "feedback": "",
                     "cases": [{"name": "p", "points": 2.0, "hidden": False,
                                "status": "passed", "message": ""}]},
               "b": {"score": 1.0, "max_score": 3.0, "status": "partial", "feedback": "",
                     "cases": [{"name": "p", "points": 1.0, "hidden": False,
                                "status": "passed", "message": ""},
                               {"name": "h", "points": 2.0, "hidden": True,
                                "status": "failed", "message": "wrong shape"}]}}}
    out = to_gradescope(sub, visibility="after_due_date")
    _valid_gradescope(out)
    tests = {t["name"]: t for t in out["tests"]}
    assert tests["a"]["visibility"] == "visible" and tests["a"]["status"] == "passed"
    assert tests["b"]["visibility"] == "after_due_date" and tests["b"]["status"] == "failed"
    assert "wrong shape" in tests["b"]["output"] and "wrong shape" not in out["output"]
    assert "b: 1/1 public cases pass" in out["output"]
    visible = to_gradescope(sub, visibility="visible")
    assert all(t["visibility"] == "visible" for t in visible["tests"])
    assert "public cases pass" not in visible["output"]


# ------------------------------------------------------------------ otter

def test_otter_zip_layout(built):
    with zipfile.ZipFile(built / f"{NAME}-otter.zip") as zf:
        names = set(zf.namelist())
        config = json.loads(zf.read("otter_config.json"))
        toml = zf.read("files/assignment.toml").decode()
    assert {"run_autograder", "setup.sh", "environment.yml", "files/reference/__init__.py",
            "files/reference/attention.py", "files/autograder/cases.py"} <= names
    assert {f"tests/{q}.py" for q in QUESTIONS} <= names
    # Nothing that otter would copy next to the submission as a second Python file.
    assert not [n for n in names if n.startswith("files/") and n.count("/") == 1
                and n.endswith(".py")]
    assert 'reference = "reference/attention.py"' in toml
    assert config["show_hidden"] is True


def _otter_sample(tmp_path: Path, assignment) -> list[Path]:
    """Wrong submissions that between them lose points on every question (the fewest the
    corpus headers allow, picked greedily: each `otter run` is a process of its own), a
    forbidden call, and one as a notebook."""
    from autograder.platforms.notebook.build import notebook_text

    wrong = {f: set(id_list(read_header(f)["loses"]))
             for f in sorted((SUBMISSIONS / "wrong").glob("*.py"))}
    sample: list[Path] = []
    uncovered = set(QUESTIONS)
    while uncovered:
        best = max(wrong, key=lambda f: len(wrong[f] & uncovered))   # first of the most
        assert wrong[best] & uncovered, f"no wrong submission loses on {uncovered}"
        sample.append(best)
        uncovered -= wrong[best]
    sample.append(SUBMISSIONS / "wrong" / "softmax_calls_torch_softmax.py")
    nb = tmp_path / "layer_norm_inplace.ipynb"
    nb.write_text(notebook_text(assignment, (SUBMISSIONS / "wrong" /
                                             "layer_norm_inplace.py").read_text()))
    return sample + [nb]


def _otter_run(zip_path: Path, submission: Path, out: Path) -> dict:
    out.mkdir(parents=True)
    target = out / f"attention{submission.suffix}"
    shutil.copy(submission, target)
    r = subprocess.run([str(Path(sys.executable).parent / "otter"), "run", "-a", str(zip_path),
                        "-o", str(out), "--no-logo", str(target)],
                       cwd=out, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    results = load_json(out / "results.json")
    return {t["name"]: t for t in results["tests"] if t["name"] in QUESTIONS}


@pytest.mark.slow
def test_otter_run_gives_the_same_scores_as_autograder_grade(built, tmp_path, assignment, grade,
                                                           corpus_results):
    sample = _otter_sample(tmp_path, assignment)
    # What `autograder grade` gives each (the same grading, in this process; the corpus files
    # as the suite graded them once).
    ours = {s.name: submission_json(corpus_results[s.name] if s.name in corpus_results
                                    else grade(s))
            for s in sample}
    zip_path = built / f"{NAME}-otter.zip"
    with ThreadPoolExecutor(max_workers=2) as pool:
        theirs = list(pool.map(lambda i: _otter_run(zip_path, sample[i], tmp_path / f"o{i}"),
                               range(len(sample))))
    for sub, otter_tests in zip(sample, theirs):
        mine = ours[sub.name]["questions"]
        assert set(otter_tests) == set(QUESTIONS), sub.name
        for qid in QUESTIONS:
            assert (otter_tests[qid]["score"], otter_tests[qid]["max_score"]) == \
                (mine[qid]["score"], mine[qid]["max_score"]), (sub.name, qid)
        assert ours[sub.name]["score"] < ours[sub.name]["max_score"]
    for qid in QUESTIONS:      # each question's lost points are compared, not only full marks
        assert any(ours[s.name]["questions"][qid]["score"] < ours[s.name]["questions"][qid][
            "max_score"] for s in sample), qid
