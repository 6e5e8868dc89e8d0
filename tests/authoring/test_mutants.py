"""`autograder mutants` on a tiny assignment written for it, whose cases are known to miss
some mistakes: each mutant lands where its cases put it (caught by a public case, only by a
hidden one, by none, equivalent, stopped by the time limit), the catalogue names what it
knows, the variant the report prints for an unnamed mutant names it once added, and
`autograder lint --mutants` reports the mutant no case catches at its line."""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from helpers import cli_in_process

from autograder.authoring.lint import lint
from autograder.authoring.mutant_report import variant_code
from autograder.authoring.mutants import (EQUIVALENT, HIDDEN, NOT_CAUGHT, PUBLIC, STOPPED,
                                          analyse)
from autograder.model.assignment import load_assignment

REFERENCE = '''\
"""Reference of a tiny assignment for the tests of the mutation analysis."""
import math

import torch


def scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def doubled_relu(x):
    return torch.relu(x) * 2


def running_sum(x):
    out = x.clone()
    i = 1
    while i < x.shape[-1]:
        out[..., i] = out[..., i] + out[..., i - 1]
        i += 1
    return out
'''

TEMPLATE = '''\
"""Three small functions."""
import torch


def scores(q, k):
    """q @ k^T / sqrt(d_k)."""
    raise NotImplementedError("scores")


def doubled_relu(x):
    """2 * relu(x)."""
    raise NotImplementedError("doubled_relu")


def running_sum(x):
    """Cumulative sum along the last axis."""
    raise NotImplementedError("running_sum")
'''

TOML = '''\
name = "sums"
title = "Sums (mutation analysis fixture)"
student_file = "sums.py"
template = "template.py"
reference = "reference.py"
mistakes = "mistakes.py"

[limits]
# Each mutant's time too: two mutants of running_sum never end.
submission_seconds = 4

[[question]]
id = "scores"
functions = ["scores"]

[[question]]
id = "relu"
functions = ["doubled_relu"]

[[question]]
id = "running"
functions = ["running_sum"]
'''

QUESTIONS = {
    # 2-D queries in public, 3-D only in hidden: `q.shape[1]` for `q.shape[-1]` shows only
    # in hidden cases.
    "scores": '''
        @test_case(name="two-d", points=1, hidden=False)
        def two_d(scores):
            q.check("scores", scores, randn(3, 4, seed=1), randn(5, 4, seed=2),
                    expected=snapshot("two_d"))


        @test_case(name="batched, float64", points=1, hidden=True)
        def batched(scores):
            q.check("scores", scores, randn(2, 3, 4, seed=3, dtype="float64"),
                    randn(2, 5, 4, seed=4, dtype="float64"), seed=1)
    ''',
    # Only positive inputs: a dropped ReLU passes every case.
    "relu": '''
        @test_case(name="small", points=1, hidden=False)
        def small(doubled_relu):
            q.check("doubled_relu", doubled_relu, tensor([1.0, 2.0, 3.0]),
                    expected=snapshot("small"))


        @test_case(name="shifted, float64", points=1, hidden=True)
        def shifted(doubled_relu):
            q.check("doubled_relu", doubled_relu, randn(2, 3, seed=5, shift=5.0,
                                                        dtype="float64"), seed=2)
    ''',
    "running": '''
        @test_case(name="four numbers", points=1, hidden=False)
        def four(running_sum):
            q.check("running_sum", running_sum, tensor([1.0, 2.0, 3.0, 4.0]),
                    expected=snapshot("four"))
    ''',
}

CATALOGUE = '''\
"""Known mistakes of the fixture."""
from autograder.catalogue import Catalogue

catalogue = Catalogue()


@catalogue.variant("no_scaling", "scores", name="scores not scaled",
                   hint="Divide by sqrt(d_k).")
def _(ref, q, k):
    return q @ k.transpose(-2, -1)
'''


def write_assignment(root: Path, catalogue: str = CATALOGUE) -> Path:
    root.mkdir(parents=True)
    (root / "assignment.toml").write_text(TOML)
    (root / "reference.py").write_text(REFERENCE)
    (root / "template.py").write_text(TEMPLATE)
    (root / "mistakes.py").write_text(catalogue)
    (root / "tests").mkdir()
    for qid, cases in QUESTIONS.items():
        (root / "tests" / f"{qid}.py").write_text(
            "from otter.test_files import test_case\n\n"
            "from autograder.cases import Question, randn, snapshot, tensor\n\n"
            f'OK_FORMAT = False\n\nname = "{qid}"\npoints = {cases.count("@test_case")}\n\n'
            "q = Question(name)\n\n"
            + textwrap.dedent(cases))
    r = cli_in_process("snapshot", "-a", str(root))
    assert r.returncode == 0, r.stdout + r.stderr
    return root


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory) -> Path:
    return write_assignment(tmp_path_factory.mktemp("mutants") / "sums")


@pytest.fixture(scope="module")
def analysis(fixture_root):
    return analyse(load_assignment(fixture_root), jobs=2,
                   functions={"scores", "doubled_relu"})


def one(analysis, function: str, before: str, after: str):
    found = [r for r in analysis.results if r.mutant.function == function
             and r.mutant.before == before and r.mutant.after == after]
    assert len(found) == 1, [(r.mutant.before, r.mutant.after) for r in analysis.results
                             if r.mutant.function == function]
    return found[0]


def test_each_mutant_lands_where_the_cases_put_it(analysis):
    scale = "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"
    dropped = one(analysis, "scores", scale, "q @ k.transpose(-2, -1)")
    assert dropped.outcome == PUBLIC and dropped.named == ["no_scaling"]
    times = one(analysis, "scores", scale, scale.replace(" / ", " * "))
    assert times.outcome == PUBLIC and times.named == []
    assert {c["case"] for c in times.failing} == {"two-d", "batched, float64"}
    # q.shape[1] is q.shape[-1] for the public 2-D queries, not for the hidden 3-D ones.
    axis = [r for r in analysis.results if r.mutant.function == "scores"
            and r.mutant.describe() == "a constant changed: `-1` -> `1`"]
    assert HIDDEN in {r.outcome for r in axis}
    hidden_only = next(r for r in axis if r.outcome == HIDDEN)
    assert [c["case"] for c in hidden_only.failing] == ["batched, float64"]
    assert one(analysis, "scores", "k.transpose(-2, -1)", "k.transpose(-1, -2)").outcome \
        == EQUIVALENT
    relu = one(analysis, "doubled_relu", "torch.relu(x)", "x")
    assert relu.outcome == NOT_CAUGHT and relu.failing == []
    assert relu.differs["function"] == "doubled_relu" and relu.differs["question"] == "relu"
    assert relu.differs["how"] == "its output differs"
    assert one(analysis, "doubled_relu", "2", "3").outcome == PUBLIC


def test_figures_count_every_mutant_once(analysis):
    f = analysis.figures()
    assert f["mutants"] == len(analysis.results) > 20
    assert sum(f[o] for o in (PUBLIC, HIDDEN, NOT_CAUGHT, EQUIVALENT, STOPPED)) == f["mutants"]
    assert f["caught"] == f[PUBLIC] + f[HIDDEN]
    assert 1 <= f["named"] < f["caught"]
    assert f[STOPPED] == 0
    assert analysis.public_cases == 3 and analysis.hidden_cases == 2


def test_a_mutant_that_never_ends_is_stopped_and_the_run_goes_on(fixture_root):
    result = analyse(load_assignment(fixture_root), jobs=2, seconds=3,
                     functions={"running_sum"})
    stopped = [r for r in result.results if r.outcome == STOPPED]
    # `i += 1` left out, or made `i += 0`: the loop never ends.
    assert sorted((r.mutant.line, r.mutant.after) for r in stopped) == [
        (20, "(nothing)"), (20, "0")], [r.mutant.describe() for r in stopped]
    assert all("still running after 3 s" in r.detail for r in stopped)
    assert any(r.outcome == PUBLIC for r in result.results)


def test_the_printed_variant_names_the_mutant_once_in_the_catalogue(analysis, tmp_path):
    scale = "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"
    times = one(analysis, "scores", scale, scale.replace(" / ", " * "))
    code = variant_code(analysis, times)
    assert code.startswith("import math   # at the top of mistakes.py\n")
    assert "def _(ref, q, k):" in code and "* math.sqrt(q.shape[-1])" in code
    added = code.split("\n", 1)[1].replace("name='...', hint='...'",
                                           "name='scaled up', hint='Divide.'")
    root = write_assignment(tmp_path / "sums", "import math\n" + CATALOGUE + "\n\n" + added + "\n")
    again = analyse(load_assignment(root), jobs=1, functions={"scores"})
    times = one(again, "scores", scale, scale.replace(" / ", " * "))
    assert times.named == [times.mutant.id.replace(":", "_")]


def test_the_command_reports_and_fails_on_a_missing_case(fixture_root, tmp_path):
    out = tmp_path / "mutants.json"
    # Run from the folder that holds the assignment, as an author would: paths print relative.
    r = cli_in_process("mutants", "-a", "sums", "--function", "doubled_relu", "--json",
                       str(out), cwd=fixture_root.parent)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "not caught by any case:        1" in r.stdout
    assert "sums/reference.py:12 doubled_relu: a call dropped (its first argument kept): " \
           "`torch.relu(x)` -> `x`" in r.stdout
    data = json.loads(out.read_text())
    assert data["figures"][NOT_CAUGHT] == 1 and data["assignment"] == "sums"
    f = data["figures"]
    row = next(line.split() for line in r.stdout.splitlines()
               if line.startswith("  doubled_relu "))
    assert row == ["doubled_relu", str(f["mutants"]), str(f[PUBLIC]), str(f[HIDDEN]), "1",
                   str(f[EQUIVALENT]), "0", str(f["named"])]
    assert str(fixture_root.parent) not in r.stdout + out.read_text()
    assert data["reference"] == "sums/reference.py"
    r = cli_in_process("mutants", "-a", str(fixture_root), "--function", "nothing_such")
    assert r.returncode == 2 and "defines no function nothing_such" in r.stderr


def test_lint_with_mutants_names_the_missing_case_at_its_line(fixture_root):
    assert lint(fixture_root) == []
    found = lint(fixture_root, mutants=True)
    assert [(e.file.name, e.line) for e in found] == [("reference.py", 12)]
    assert "no case catches the mutant of `doubled_relu`" in found[0].message
    assert "question 'relu'" in found[0].fix


def test_the_reference_failing_a_case_stops_the_analysis(fixture_root, tmp_path):
    root = tmp_path / "broken"
    shutil.copytree(fixture_root, root)
    (root / "reference.py").write_text(REFERENCE.replace("* 2", "* 2.5"))
    r = cli_in_process("mutants", "-a", str(root))
    assert r.returncode == 2 and "the reference does not pass every case" in r.stderr
