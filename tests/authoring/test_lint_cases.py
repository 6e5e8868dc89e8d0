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


DTYPE_CASE = '''

@test_case(name="float64 when asked", points=1, hidden=True)
def float64(sinusoidal_positions):
    import torch

    q.check("sinusoidal_positions", sinusoidal_positions, 7, 10, dtype=torch.float64)
'''


def test_an_input_that_cannot_reach_the_students_process_is_found(tmp_path):
    """A case input the wire format cannot carry (a torch.dtype, which the reference takes)
    passes when the reference runs in the author's process, yet would reach the student's
    worker as an opaque stand-in: lint says so, by the case's file and line, before any student
    is graded."""
    adir = copy_assignment(tmp_path / "tokens", "tokens")
    path = adir / "tests" / "positions.py"
    path.write_text(path.read_text().replace("points = 6", "points = 7") + DTYPE_CASE)
    case = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                if '"float64 when asked"' in text)
    found = [e for e in lint(adir) if e.file.name == "positions.py"]
    assert [e.line for e in found] == [case], [str(e) for e in found]
    assert "sinusoidal_positions a value of type dtype, which cannot be sent to a student's " \
           "process" in found[0].message, found[0].message


@pytest.mark.parametrize("name", assignment_names())
def test_the_bundled_assignments_pass_every_case(name):
    assert lint(name) == [], name


def test_gradescope_hidden_visibility_hidden_is_refused(adir):
    toml = adir / "assignment.toml"
    toml.write_text(toml.read_text().replace('hidden_visibility = "after_published"',
                                             'hidden_visibility = "hidden"'))
    found = [e for e in lint(adir, reference=False) if e.file.name == "assignment.toml"]
    assert len(found) == 1 and "total score" in found[0].message
