"""The command line as students and instructors use it."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, ROOT, SUBMISSIONS, WRITTEN,
                     cli_in_process, copy_assignment, run_cli)


def test_student_check_of_the_template(tmp_path):
    shutil.copy(ROOT / "student_template" / "attention.py", tmp_path / "attention.py")
    r = run_cli("check", "attention.py", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.count("not attempted") == len(QUESTIONS)
    # Hidden cases are named only in the sentence on what is graded later (their number and
    # points, which the student bundle records too), never one of them.
    later = next(line for line in r.stdout.splitlines() if "graded later" in line)
    assert "hidden cases, worth" in later
    assert "hidden" not in r.stdout.replace(later, "")


def test_student_check_of_a_wrong_file_names_the_problem(tmp_path):
    shutil.copy(SUBMISSIONS / "wrong" / "causal_mask_float.py", tmp_path / "attention.py")
    r = run_cli("check", str(tmp_path / "attention.py"))
    assert r.returncode == 1
    assert "expected dtype bool, got float32" in r.stdout
    assert "[PASS] softmax" in r.stdout


def test_student_check_needs_no_reference(tmp_path):
    """Public checks run from snapshots: hide the reference and they still pass."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "autograder", project / "autograder")
    shutil.copytree(ROOT / "assignments", project / "assignments")
    shutil.copytree(ROOT / "student_template", project / "student_template")
    shutil.copy(ROOT / "reference" / "attention.py", tmp_path / "attention.py")
    r = run_cli("check", str(tmp_path / "attention.py"), cwd=project,
                env={"PYTHONPATH": str(project)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "All public checks pass" in r.stdout


def test_grade_json_contract(tmp_path):
    out = tmp_path / "results.json"
    r = run_cli("grade", "-a", "attention", str(SUBMISSIONS / "correct" / "einsum_style.py"),
                str(SUBMISSIONS / "broken"), "--json", str(out))
    assert r.returncode == 0, r.stderr
    data = json.loads(out.read_text())
    assert data["assignment"] == "attention"
    paths = [s["path"] for s in data["submissions"]]
    assert len(paths) == 1 + len(list((SUBMISSIONS / "broken").glob("*.py")))
    for s in data["submissions"]:
        assert set(s) >= {"path", "score", "max_score", "error", "questions"}
        assert list(s["questions"]) == QUESTIONS + WRITTEN
        for q in s["questions"].values():
            assert set(q) >= {"score", "max_score", "status", "feedback"}
            assert isinstance(q["feedback"], str)
        for qid in WRITTEN:   # unanswered: 0 points, nothing waits for a grader
            assert s["questions"][qid]["kind"] == "written"
            assert (s["questions"][qid]["score"], s["questions"][qid]["status"]) == \
                (0, "not attempted")
    first = data["submissions"][0]
    assert first["score"] == AUTOGRADED_MAX and first["max_score"] == MAX_SCORE
    assert "sandbox:" in r.stdout


def test_unknown_assignment_is_a_clear_error():
    r = run_cli("grade", "-a", "nope", str(SUBMISSIONS / "correct"))
    assert r.returncode == 2 and "no assignment 'nope'" in r.stderr


# ------------------------------------------------------------------ -a: a path or a name

def test_assignment_is_a_path_or_a_name_under_the_current_folders_assignments(tmp_path):
    """In a course folder outside the project: `-a relu` finds the folder `relu/` there, and
    `-a softmax_only` the folder `assignments/softmax_only/` there."""
    course = tmp_path / "course"
    copy_assignment(course / "relu", "attention_numpy")
    copy_assignment(course / "assignments" / "softmax_only", "attention_numpy")
    for name, shown in (("relu", "relu"), ("softmax_only", "assignments/softmax_only")):
        r = cli_in_process("lint", "-a", name, "--no-reference", cwd=course)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.splitlines()[0] == f"{shown}: no authoring problems found"


def test_an_unknown_assignment_says_where_it_was_looked_for_in_one_line(tmp_path):
    r = cli_in_process("lint", "-a", "nope", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    line, = r.stderr.strip().splitlines()
    assert line.startswith("autograder: no assignment 'nope'")
    for place in ("nope/assignment.toml", str(ROOT / "assignments" / "nope" / "assignment.toml"),
                  "assignments/nope/assignment.toml"):
        assert place in line, line


def test_every_subcommand_takes_the_same_assignment_argument_and_describes_itself():
    from autograder.model.assignment import ASSIGNMENT_ARGUMENT_HELP
    from autograder.cli import build_parser

    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command")
    listed = {c.dest: c.help for c in subcommands._choices_actions}
    assert set(listed) == set(subcommands.choices)
    for name, sub in subcommands.choices.items():
        assert listed[name] and sub.description, name
        assert sub.description.rstrip(".").lower() == listed[name].lower(), name
        (arg,) = [a for a in sub._actions if "--assignment" in a.option_strings] or [None]
        # `new` makes an assignment (its NAME operand), `sandbox` needs none.
        if name not in ("sandbox", "new"):
            assert arg is not None and arg.help.startswith(ASSIGNMENT_ARGUMENT_HELP), name
    r = run_cli("lint", "--help")
    assert r.returncode == 0
    assert "Find authoring mistakes in an assignment" in r.stdout
    assert "a folder holding assignment.toml" in " ".join(r.stdout.split())
    top = run_cli("--help").stdout
    assert "find authoring mistakes in an assignment" in top and "check" in top


def test_version_names_the_package_and_the_engine():
    import autograder
    from autograder.model.project import engine_version

    r = run_cli("--version")
    assert r.returncode == 0
    assert r.stdout.strip() == f"autograder {autograder.__version__} (engine {engine_version()})"


def test_the_engine_version_follows_the_engine_files(tmp_path):
    from autograder.platforms.build import write_engine
    from autograder.model.project import engine_version

    copy = write_engine(tmp_path)
    assert engine_version(copy) == engine_version()      # a bundle's copy says the same
    (copy / "grading" / "grade.py").write_text((copy / "grading" / "grade.py").read_text() + "\n# changed\n")
    assert engine_version(copy) != engine_version()


# ------------------------------------------------------------------ missing files

def test_grade_of_a_missing_file_keeps_its_row_and_fails(tmp_path):
    shutil.copy(ROOT / "student_template" / "attention.py", tmp_path / "attention.py")
    out = tmp_path / "results.json"
    r = cli_in_process("grade", "-a", "attention", "attention.py", "gone.py", "--json",
                       str(out), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        "autograder: not found: gone.py (graded 0, with a row saying so)"]
    rows = {s["path"]: s for s in json.loads(out.read_text())["submissions"]}
    assert set(rows) == {"attention.py", "gone.py"}
    assert rows["gone.py"]["score"] == 0 and "not found" in rows["gone.py"]["error"]
    assert rows["attention.py"]["error"] is None


def test_check_of_a_missing_file_is_one_line(tmp_path):
    r = cli_in_process("check", "gone.py", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "autograder: gone.py not found; give the path of your .py or .ipynb"]


# ------------------------------------------------------------------ entry points

def _module(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


BAD_INVOCATIONS = [
    ("autograder",),
    ("autograder", "grade", "-a", "nope", "x.py"),
    ("autograder", "check", "--bogus"),
    ("autograder.cli", "lint"),
    ("autograder.notebook", "attention"),              # the module's old name
    ("autograder.actions",),
    ("autograder.gradescope", "-a", "attention"),
    ("autograder.classroom50",),
    ("autograder.authoring.notebook", "attention"),    # its name before the move
    ("autograder.platforms.notebook",),
    ("autograder.platforms.notebook", "nope"),
    ("autograder.platforms.notebook", "attention", "--bogus"),
    ("autograder.platforms.actions",),
    ("autograder.platforms.actions", "-a", "nope"),
    ("autograder.platforms.classroom50", "-a", "nope"),
    ("autograder.platforms.gradescope",),
    ("autograder.platforms.gradescope", "-a", "nope", "--from-json", "x.json"),
    ("autograder.platforms.gradescope", "-a", "attention", "--from-json", "gone.json"),
    ("autograder.platforms.gradescope", "-a", "attention", "--root", "no-such-folder"),
    ("autograder.platforms.classroom50.autograder_script",),
    ("autograder.sandbox.forkserver",),
    ("autograder.sandbox.forkserver", "abc"),
]


@pytest.mark.parametrize("args", BAD_INVOCATIONS, ids=" ".join)
def test_every_entry_point_says_a_bad_invocation_in_one_line(args, tmp_path):
    """Every `python -m autograder...` with a `__main__` block, old module names included."""
    r = _module(*args, cwd=tmp_path if "--root" in args else ROOT)
    text = (r.stdout + r.stderr).strip()
    assert r.returncode != 0, text
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert not (tmp_path / "no-such-folder").exists()      # nothing made where nothing was


def test_every_main_block_is_in_the_list_above():
    """A new `__main__` block gets its bad invocations listed too."""
    import ast

    listed = {args[0] for args in BAD_INVOCATIONS}
    found = set()
    for path in (ROOT / "autograder").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        main_block = any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
                         for node in ast.parse(path.read_text()).body)
        if rel.name == "__main__":
            found.add(".".join(rel.parts[:-1]))
        elif main_block:
            found.add(".".join(rel.parts))
    assert {"autograder", "autograder.platforms.notebook"} <= found
    # Each platform package is its own entry point (deployed scripts run these names).
    assert {"autograder.platforms.gradescope", "autograder.platforms.classroom50",
            "autograder.platforms.actions"} <= found
    assert found <= listed, found - listed


def test_an_old_module_name_points_at_the_new_one():
    r = _module("autograder.notebook", "attention")
    assert r.stderr.strip() == ("python -m autograder.notebook: moved; run "
                                "python -m autograder.platforms.notebook instead")


def test_build_writes_to_dist_by_default_and_git_ignores_it():
    from autograder.cli import build_parser

    args = build_parser().parse_args(["build", "-a", "attention"])
    assert args.out == "dist"
    ignored = subprocess.run(["git", "check-ignore", "-q", "dist/attention-student.zip"],
                             cwd=ROOT, capture_output=True)
    if (ROOT / ".git").exists():   # a checkout (an unpacked copy has no git metadata)
        assert ignored.returncode == 0
    assert "/dist/" in (ROOT / ".gitignore").read_text().splitlines()


def test_classroom_of_a_missing_file_fails_the_step(tmp_path):
    """The reporter's line still says 0 points; the command fails too, so CI shows it."""
    import base64

    r = cli_in_process("classroom", "-a", "attention", str(tmp_path / "attention.py"), "--question",
                "softmax")
    assert r.returncode == 2 and "not found" in r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("result="))
    data = json.loads(base64.b64decode(line.removeprefix("result=")))
    assert data["status"] == "error" and sum(t["score"] for t in data["tests"]) == 0
    shutil.copy(SUBMISSIONS / "correct" / "einsum_style.py", tmp_path / "attention.py")
    r = cli_in_process("classroom", "-a", "attention", str(tmp_path / "attention.py"), "--question",
                "softmax")
    assert r.returncode == 0, r.stderr
