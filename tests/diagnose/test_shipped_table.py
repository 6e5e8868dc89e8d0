"""The table of known mistakes' outcomes that the student bundle ships
(autograder.diagnose.table): it names in a student's own check the mistakes the instructor's
grade names on the public cases, from public data alone.

* It holds only what public cases compute: no hidden case's name, input or outcome, no line of
  the reference or the catalogue, no error's file or code.
* The check reads it, in the project and in the bundle alike, and names what the reference's
  variants name on the same public cases (the seam, `diagnose.sources`).
* An outcome it does not hold leaves the case without a name, never with another one.
* `autograder lint` says when it is missing or stale, or when a rule cannot ship.
"""
from __future__ import annotations

import ast
import json
import lzma
import struct
from pathlib import Path

import pytest

from helpers import (SUBMISSIONS, assignment_names, cli_in_process, copy_assignment,
                     corpus_files, run_cli)

from autograder.model.assignment import load_assignment
from autograder.authoring.mistake_table import public_records
from autograder.diagnose import catalogue_for
from autograder.diagnose import session as session_module
from autograder.yardsticks.bundle_check import bundle_assignment, public_places
from autograder.diagnose.portable import catalogue_data, catalogue_from_data, from_spec, to_spec
from autograder.diagnose.session import Session
from autograder.diagnose.table import MAGIC, MistakeTable
from autograder.diagnose.variants import VariantRunner
from autograder.checking.context import CheckContext, Mode, Recording
from autograder.grading.grade import check_in_process
from autograder.grading.runner import load_question_file, run_question

# Every assignment with a catalogue ships a table; each is held to the same promises.
TRACKS = [n for n in assignment_names() if catalogue_for(load_assignment(n)) is not None]
WRONG = {n: corpus_files(n)[0] for n in TRACKS}


def _header(assignment) -> tuple[str, dict]:
    raw = lzma.decompress(assignment.mistake_table.read_bytes())
    assert raw.startswith(MAGIC)
    (size,) = struct.unpack(">Q", raw[len(MAGIC):len(MAGIC) + 8])
    text = raw[len(MAGIC) + 8:len(MAGIC) + 8 + size].decode()
    return text, json.loads(text)


def _all_record_keys(assignment) -> set[str]:
    """The digest of every check every case makes, hidden ones included (the reference as the
    student)."""
    ref = assignment.load_reference()
    env = {n: getattr(ref, n, None) for n in list(assignment.api) + list(assignment.answers)}
    session = Session(assignment)
    context = CheckContext(Mode.RECORD, session=session, recording=Recording())
    for q in assignment.questions:
        run_question(assignment, q.id, env, include_hidden=True, context=context)
    return {r.key.hex() for rs in session.passed.values() for r in rs}


def _distinctive_lines(path: Path) -> set[str]:
    src = path.read_text()
    lines = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef):
            for stmt in node.body[1:] if ast.get_docstring(node) else node.body:
                for line in ast.get_source_segment(src, stmt).splitlines():
                    line = line.strip()
                    if len(line) >= 24 and not line.startswith(("#", "raise ", "with warnings")):
                        lines.add(line)
    return lines


@pytest.mark.parametrize("name", TRACKS)
def test_the_table_holds_public_checks_only_and_no_code(name):
    assignment = load_assignment(name)
    _, header = _header(assignment)
    public = {r.key.hex() for r in public_records(assignment)}
    hidden = _all_record_keys(assignment) - public
    assert hidden and public
    assert {r["digest"] for r in header["records"]} == public
    assert not hidden & {r["digest"] for r in header["records"]}
    # No hidden case's name (the catalogue's names and hints aside: they are meant to ship,
    # and may use the same words, such as "large scores").
    data = json.dumps({k: v for k, v in header.items() if k != "catalogue"})
    for q in assignment.questions:
        for tc in load_question_file(str(q.test_file)).test_cases:
            if tc.hidden:
                assert json.dumps(tc.name)[1:-1] not in data, tc.name
    # No line of the reference or of the catalogue's variants, and errors without their place.
    # (Hints, written to be shown to students, may quote the fix: they ship already, in every
    # feedback the grade gives.)
    catalogue = {**header["catalogue"], "mistakes": [
        {k: v for k, v in m.items() if k not in ("name", "hint")}
        for m in header["catalogue"]["mistakes"]]}
    data = json.dumps({**header, "catalogue": catalogue})
    secret = _distinctive_lines(assignment.reference_path) | \
        _distinctive_lines(Path(assignment.root / "mistakes.py"))
    assert len(secret) > 30
    leaked = [line for line in secret if line in data]
    assert not leaked, leaked[:3]
    for outcome in header["outcomes"]:
        error = outcome["node"].get("error")
        assert error is None or set(k for k, v in error.items() if v is not None) <= \
            {"type", "message"}
        assert not outcome["node"].get("called")


@pytest.mark.parametrize("name", TRACKS)
def test_the_catalogue_ships_as_data_with_the_same_rules(name):
    catalogue = catalogue_for(load_assignment(name))
    data = catalogue_data(catalogue)
    shipped = catalogue_from_data(json.loads(json.dumps(data)))
    assert list(shipped.mistakes) == list(catalogue.mistakes)
    for mid, m in catalogue.mistakes.items():
        s = shipped.mistakes[mid]
        assert (s.name, s.hint, s.questions, s.functions, s.fallback, s.combines, s.crashes) == \
            (m.name, m.hint, m.questions, m.functions, m.fallback, m.combines, m.crashes)
        assert [set(a) for a in s.alternatives] == [set(a) for a in m.alternatives]
        for rule in ("when", "detail"):
            mine = getattr(m, rule)
            assert (mine is None) == (getattr(s, rule) is None), (mid, rule)
            if mine is not None:
                assert to_spec(getattr(s, rule)) == to_spec(mine), (mid, rule)
    # A rule is rebuilt from the engine's symptoms by name, nothing else.
    with pytest.raises(ValueError):
        from_spec({"symptom": "__import__"})
    with pytest.raises(ValueError):
        from_spec({"made_by": "eval", "args": ["1"]})


def _names(result) -> dict:
    return {(qid, c.name): list(c.diagnosis or []) for qid, q in result.questions.items()
            for c in q.cases}


@pytest.mark.parametrize("name", TRACKS)
def test_the_check_names_from_the_table_what_the_reference_names(name, monkeypatch):
    """The project's check reads the table; with the reference's variants instead (the table
    hidden from it), every public case of every wrong submission gets the same names, except
    where the table lacks a combination (three mistakes, or two of the helpers'): there the
    case gets no name rather than another."""
    assignment = load_assignment(name)
    files = WRONG[name]
    from_table = {f.name: _names(check_in_process(assignment, f)) for f in files}
    assert sum(bool(v) for r in from_table.values() for v in r.values()) >= len(files)
    monkeypatch.setattr(session_module, "load_table", lambda a: None)
    from_reference = {f.name: _names(check_in_process(assignment, f)) for f in files}
    assert from_table.keys() == from_reference.keys()
    unnamed = []
    for f, cases in from_table.items():
        for case, names in cases.items():
            if names != from_reference[f][case]:
                assert not names, (f, case, names, from_reference[f][case])
                unnamed.append((f, case, from_reference[f][case]))
    assert all(len(names) >= 2 for *_, names in unnamed), unnamed
    assert len({f for f, *_ in unnamed}) <= 2, unnamed


def test_the_bundle_check_names_the_mistake_from_the_bundle_alone(built, tmp_path):
    """The README's example, from the unzipped student bundle: no reference, no catalogue."""
    bundle = built / "attention-student"
    assert not list(bundle.rglob("mistakes.py")) and not list(bundle.rglob("reference*"))
    assert (bundle / "assignments" / "attention" / "snapshots" / "mistake-outcomes.bin").is_file()
    work = tmp_path / "work"
    import shutil
    shutil.copytree(bundle, work)
    (work / "attention.py").write_text(
        (SUBMISSIONS / "wrong" / "attention_divides_by_dk.py").read_text())
    r = run_cli("check", "attention.py", cwd=work)
    assert r.returncode == 1, r.stderr
    assert "likely mistake: scores divided by d_k instead of sqrt(d_k). Divide q @ k^T by " \
           "the square root of the key size" in r.stdout, r.stdout


def test_the_numpy_bundle_names_mistakes_too():
    path = SUBMISSIONS / "numpy" / "wrong" / "layer_norm_unbiased_variance.py"
    with bundle_assignment(load_assignment("attention_numpy")) as bundled:
        assert bundled.reference_path is None and catalogue_for(bundled) is None
        result = check_in_process(bundled, path)
    assert public_places(result) == {("block", "unbiased_variance")}


def test_an_outcome_the_table_lacks_leaves_the_case_unnamed(monkeypatch):
    """A block with two mistakes of its own is named from the table; without the table's
    combinations it gets no name at all, not a wrong one."""
    assignment = load_assignment("attention")
    path = SUBMISSIONS / "wrong" / "block_gelu_no_ffn_residual.py"
    pair = {"missing_ffn_residual", "ffn_gelu"}
    block = check_in_process(assignment, path).questions["block"]
    named = [set(c.diagnosis) for c in block.cases if c.diagnosis]
    assert named and all(n == pair for n in named), named

    real = MistakeTable.outcome

    def singles_only(self, record_key, variant, grads):
        return None if "+" in variant else real(self, record_key, variant, grads)

    monkeypatch.setattr(MistakeTable, "outcome", singles_only)
    monkeypatch.setattr(VariantRunner, "_outcomes", {})     # outcomes already read are cached
    monkeypatch.setattr(VariantRunner, "_stacks", {})
    block = check_in_process(assignment, path).questions["block"]
    failing = [c for c in block.cases if c.status != "passed"]
    assert failing and not any(c.diagnosis for c in failing), [c.diagnosis for c in failing]


def test_lint_says_when_the_table_is_stale_and_snapshot_records_it_once(tmp_path):
    adir = copy_assignment(tmp_path / "attention_numpy", "attention_numpy")
    r = cli_in_process("lint", "-a", str(adir))
    assert r.returncode == 0, r.stderr
    test_file = adir / "tests" / "softmax.py"
    test_file.write_text(test_file.read_text() + "\n# a change\n")
    r = cli_in_process("lint", "-a", str(adir))
    assert r.returncode == 1 and "mistake-outcomes.bin is stale" in r.stderr, r.stderr
    r = cli_in_process("snapshot", "-a", str(adir))
    assert r.returncode == 0, r.stderr
    assert "wrote " in r.stdout and "mistake-outcomes.bin" in r.stdout, r.stdout
    assert cli_in_process("lint", "-a", str(adir)).returncode == 0
    again = cli_in_process("snapshot", "-a", str(adir))
    assert all(line.startswith("unchanged ") for line in again.stdout.splitlines()), again.stdout


def test_lint_reports_a_rule_that_cannot_ship(tmp_path):
    adir = copy_assignment(tmp_path / "attention_numpy", "attention_numpy")
    mistakes = adir / "mistakes.py"
    mistakes.write_text(mistakes.read_text() + (
        '\ncatalogue.rule("odd_rule", name="an odd rule", hint="do better",\n'
        '               when=lambda ev: False)\n'))
    r = cli_in_process("lint", "-a", str(adir))
    assert r.returncode == 1
    assert "mistake odd_rule: its when= rule cannot ship to students" in r.stderr, r.stderr


def test_lint_reports_a_mistake_no_public_case_catches(tmp_path):
    """Every catalogued mistake with a variant fails some public case of both tracks (lint is
    clean above); one that no public input shows is reported."""
    adir = copy_assignment(tmp_path / "attention_numpy", "attention_numpy")
    mistakes = adir / "mistakes.py"
    mistakes.write_text(mistakes.read_text() + (
        '\n@catalogue.variant("rounds_huge_logits", "softmax", name="huge logits rounded",\n'
        '                   hint="do not round")\n'
        'def _(ref, x, axis=-1):\n'
        '    return ref.softmax(np.where(np.abs(x) > 1e6, np.round(x), x), axis)\n'))
    assert cli_in_process("snapshot", "-a", str(adir)).returncode == 0
    r = cli_in_process("lint", "-a", str(adir))
    assert r.returncode == 1
    assert "no public case catches the mistake rounds_huge_logits (huge logits rounded)" \
        in r.stderr, r.stderr
    assert r.stderr.count("no public case catches") == 1
