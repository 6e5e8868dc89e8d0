"""`autograder lint` runs every case, hidden ones included, against the reference: a hidden
case that names a function the reference lacks, or that the reference fails, is named by its
file and line before any student is graded; at grade time such a case is an internal error on
every row, and `grade` says the rows need the instructor (exit status 4)."""
import pytest

from helpers import SUBMISSIONS, assignment_names, cli_in_process, copy_assignment

from autograder.authoring.lint import lint

GOOD = 'q.check("layer_norm", layer_norm, x, gamma, beta, seed=19)'


@pytest.fixture
def adir(tmp_path):
    folder = copy_assignment(tmp_path / "attention")
    assert GOOD in (folder / "tests" / "block.py").read_text()
    return folder


def _edit(adir, new: str) -> int:
    path = adir / "tests" / "block.py"
    text = path.read_text()
    path.write_text(text.replace(GOOD, new, 1))
    return text[:text.index(GOOD)].count("\n") + 1


def test_a_hidden_case_naming_a_missing_function_is_found(adir):
    line = _edit(adir, GOOD.replace('"layer_norm"', '"layer_nrm"'))
    found = [e for e in lint(adir, reference=False) if e.file.name == "block.py"]
    assert [e.line for e in found] == [line]
    assert "`layer_nrm`" in found[0].message and "did you mean `layer_norm`" in found[0].message
    r = cli_in_process("lint", "-a", str(adir))
    assert r.returncode == 1 and f"block.py:{line}:" in r.stderr
    r = cli_in_process("build", "-a", str(adir), "--out", str(adir.parent / "dist"))
    assert r.returncode == 2 and "authoring problem" in r.stderr


def test_a_hidden_case_the_reference_fails_is_found(adir):
    _edit(adir, GOOD.replace("gamma, beta, seed", "gamma, seed"))   # beta left out
    found = [e for e in lint(adir) if e.file.name == "block.py"]
    assert len(found) == 1 and "the reference fails the hidden case" in found[0].message
    assert "missing 1 required positional argument" in found[0].message
    assert found[0].line > 1


def test_grading_with_such_a_case_needs_the_instructor(adir, tmp_path):
    _edit(adir, GOOD.replace('"layer_norm"', '"layer_nrm"'))
    r = cli_in_process("grade", "-a", str(adir), str(SUBMISSIONS / "correct" / "einsum_style.py"),
                       "--question", "block", "--jobs", "1", "--out", str(tmp_path / "out"))
    assert r.returncode == 4, r.stderr[-2000:]
    assert "1 row(s) need you: einsum_style (internal error)" in r.stderr


@pytest.mark.parametrize("name", assignment_names())
def test_the_bundled_assignments_pass_every_case(name):
    assert lint(name) == [], name


def test_gradescope_hidden_visibility_hidden_is_refused(adir):
    toml = adir / "assignment.toml"
    toml.write_text(toml.read_text().replace('hidden_visibility = "after_published"',
                                             'hidden_visibility = "hidden"'))
    found = [e for e in lint(adir, reference=False) if e.file.name == "assignment.toml"]
    assert len(found) == 1 and "total score" in found[0].message
