"""Naming what real code does: a case that fails inside a helper of another question is graded
again with correct helpers standing in (and the feedback says both), a silently wrong shape is
named as code written for one number of dimensions (also by the student's own check, from the
public cases of another rank), and a mistake tied to a construct is named only where the code
holds it or the evidence could be nothing else."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from helpers import SUBMISSIONS

import autograder.grading.grade as grading
from autograder.model.assignment import load_assignment
from autograder.diagnose import stand_ins
from autograder.diagnose.constructs import code_for, has_construct
from autograder.diagnose.portable import catalogue_data, catalogue_from_data
from autograder.diagnose.sources import OutcomeUnknown
from autograder.grading.grade import check_in_process, grade_submission

REALWORLD = SUBMISSIONS / "realworld"


@pytest.fixture(scope="module")
def numpy_assignment():
    return load_assignment("attention_numpy")


def _failing(result, qid):
    return [c for c in result.questions[qid].cases if c.status != "passed"]


# ------------------------------------------------------------------ helpers replaced

def test_a_block_failing_inside_its_attention_is_judged_on_its_own_too(grade):
    """Every block case crashes inside the student's multi-head attention; with a correct one
    in its place the block shows its own two mistakes, and each case says both."""
    result = grade(REALWORLD / "block_after_norm_gelu_mask_view.py")
    failing = _failing(result, "block")
    for c in failing:
        assert {"residual_after_norm", "ffn_gelu"} <= set(c.diagnosis), (c.name, c.diagnosis)
    # The batch of one runs through their attention (a batch, no mask): named directly.
    crashed = [c for c in failing if c.status == "error"]
    assert len(crashed) == 4 and len(failing) == 5
    for c in crashed:
        assert "This case calls your `multi_head_attention`, which fails question " \
               "'multi_head'" in c.hint, c.hint
        assert "With a correct one in its place, your `transformer_block` still fails this " \
               "case: likely mistakes, all together: the residual added after the layer " \
               "norm; and GELU instead of ReLU" in c.hint, c.hint
    # The hidden masked case raised at their mask line: the block's own names come from the
    # re-run alone.
    masked = next(c for c in crashed if c.name == "block with a causal mask, batch, float64")
    assert masked.hidden and masked.diagnosis[-2:] == ["residual_after_norm", "ffn_gelu"]


def test_a_case_that_passes_with_correct_helpers_says_so(grade):
    result = grade(REALWORLD / "annotated_view_split_heads.py")
    masked = next(c for c in _failing(result, "block") if c.name == "block with a causal mask")
    assert "With correct ones in their place, your `transformer_block` passes this case: " \
           "fix them first." in masked.hint, masked.hint
    assert "your `multi_head_attention`, which fails question 'multi_head' (likely mistake " \
           "there: code written for one number of dimensions)" in masked.hint
    # The split's own failing call stands in for the merge it never reached: with both
    # replaced, multi-head attention itself is right.
    cross = next(c for c in _failing(result, "multi_head")
                 if c.name.startswith("lesson: action queries"))
    assert "your `multi_head_attention` passes this case" in cross.hint, cross.hint


def test_standing_in_for_helpers_changes_no_score_and_no_status(grade, assignment, sandbox,
                                                                monkeypatch):
    path = REALWORLD / "block_after_norm_gelu_mask_view.py"
    with_them = grade(path)

    class NoStandIns(stand_ins.WorkerStandIns):
        def __call__(self, *args, **kwargs):
            raise OutcomeUnknown("off")

    monkeypatch.setattr(grading, "WorkerStandIns", NoStandIns)
    without = grade_submission(assignment, path, sandbox)
    assert with_them.score == without.score and with_them.max_score == without.max_score
    for qid, q in with_them.questions.items():
        other = without.questions[qid]
        assert [(c.name, c.status, c.score) for c in q.cases] == \
               [(c.name, c.status, c.score) for c in other.cases]
    # Without the re-run the block's own mistakes stay unnamed where it crashed.
    for c in _failing(without, "block"):
        if c.status == "error":
            assert not {"residual_after_norm", "ffn_gelu"} & set(c.diagnosis or []), c.name


def _spawns(sandbox, monkeypatch) -> list:
    """Count the workers the sandbox starts from here on."""
    started = []
    spawn = sandbox.spawn

    def counting(*args, **kwargs):
        started.append(args[1] if len(args) > 1 else kwargs.get("forbidden"))
        return spawn(*args, **kwargs)
    monkeypatch.setattr(sandbox, "spawn", counting)
    return started


def test_the_re_runs_take_over_the_submissions_own_worker(assignment, sandbox, monkeypatch):
    """Once grading is over, the re-runs run in the worker that graded the file (it adds the
    entry to the module itself): no second worker imports the file again, and the hints are
    those of a worker of their own."""
    path = REALWORLD / "block_after_norm_gelu_mask_view.py"

    class NoStandIns(stand_ins.WorkerStandIns):
        def __call__(self, *args, **kwargs):
            raise OutcomeUnknown("off")

    with monkeypatch.context() as m:
        m.setattr(grading, "WorkerStandIns", NoStandIns)
        alone = _spawns(sandbox, m)
        grade_submission(assignment, path, sandbox)
    taken_over = _spawns(sandbox, monkeypatch)
    result = grade_submission(assignment, path, sandbox)
    assert len(taken_over) == len(alone) >= 1
    hints = {c.name: (c.hint, c.diagnosis) for c in _failing(result, "block")}
    assert any("With a correct one in its place" in (h or "") for h, _ in hints.values())

    # A worker that cannot add the entry (the student's code may have broken its loop): the
    # re-runs start one of their own, importing a copy of the file, and say the same.
    def refuses(session):
        raise grading.WorkerStopped("error", "no entry")
    monkeypatch.setattr(grading.WorkerSession, "add_entry", refuses)
    own = _spawns(sandbox, monkeypatch)
    again = grade_submission(assignment, path, sandbox)
    assert len(own) == len(alone) + 1
    assert {c.name: (c.hint, c.diagnosis) for c in _failing(again, "block")} == hints


def test_a_file_that_rewrites_the_re_runs_entry_changes_no_score(assignment, sandbox, tmp_path,
                                                                  monkeypatch):
    """The re-runs run in the worker that graded the file, in the module the student's code
    can rewrite: a block that swaps the entry for its own (a forged "it passes") or leaves
    the module unusable changes what a hint says at most, never a score or a status."""
    source = (SUBMISSIONS / "correct" / "reference_style.py").read_text() + f'''

def multi_head_attention(x, params, n_heads, mask=None, context=None):
    raise ValueError("not written yet")


def transformer_block(x, params, n_heads, mask=None):
    globals()["{stand_ins.ENTRY}"] = lambda *a, **k: ("ok", x, [])
    globals()["softmax"] = None
    return multi_head_attention(x, params, n_heads, mask)
'''
    path = tmp_path / "attention.py"
    path.write_text(source)
    forged = grade_submission(assignment, path, sandbox)

    class NoStandIns(stand_ins.WorkerStandIns):
        def __call__(self, *args, **kwargs):
            raise OutcomeUnknown("off")

    monkeypatch.setattr(grading, "WorkerStandIns", NoStandIns)
    plain = grade_submission(assignment, path, sandbox)
    assert forged.score == plain.score and not forged.integrity and not forged.error
    for qid, q in forged.questions.items():
        assert [(c.name, c.status, c.score) for c in q.cases] == \
               [(c.name, c.status, c.score) for c in plain.questions[qid].cases]
    crashed = [c for c in forged.questions["block"].cases if "not written yet" in c.message]
    assert crashed and all(c.status == "error" and c.score == 0 for c in crashed)


def test_a_worker_handed_over_takes_what_happens_in_it_with_it(sandbox):
    """`hand_over` moves the live worker to the diagnosis's session: the grading session can
    close without stopping it, and a refusal in it is the new session's, not the grade's."""
    from autograder.model.limits import Limits
    from autograder.sandbox.session import WorkerSession, WorkerStopped
    from autograder.sandbox.stand_in_entry import ENTRY, SOURCE

    source = "import torch\n\ndef f(x):\n    return torch.softmax(x, -1)\n\n" \
             "def g(x):\n    return x * 2\n"
    schedule = [("q", ("torch.softmax",))]
    made = dict(sandbox=sandbox, filename="attention.py", module="attention", api=["f", "g"],
                limits=Limits(), schedule=schedule)
    graded = WorkerSession(source=source, **made)
    assert graded.start().ok
    x = torch.ones(2, 3)
    assert graded.call("g", (x,), {}, upstream=None, want_grad=False,
                       forbidden=["torch.softmax"])["status"] == "ok"
    diagnosis = WorkerSession(source=source + SOURCE, **made)
    assert graded.hand_over(diagnosis)
    worker = diagnosis.wid
    graded.close()      # the grading session is done with the worker, not the worker itself
    diagnosis.add_entry()
    out = diagnosis.call(ENTRY, ("g", [], [], x), {}, upstream=None, want_grad=False,
                         forbidden=["torch.softmax"])
    assert diagnosis.wid == worker and out["output"][0] == "ok"
    assert torch.equal(out["output"][1], x * 2)
    with pytest.raises(WorkerStopped) as refused:
        diagnosis.call("f", (x,), {}, upstream=None, want_grad=False,
                       forbidden=["torch.softmax"])
    assert refused.value.status == "forbidden"
    assert not (graded.escapes or graded.failed or graded.imported or graded.unarmed)
    assert graded.sock is None and not graded.hand_over(diagnosis)
    diagnosis.close()


@pytest.mark.parametrize("source", ["x = 1\n", "x = 1", "", "def f():\n    return (1 +\n 2)\n"])
def test_the_entry_a_worker_adds_reads_as_the_one_appended_to_a_copy(source):
    """Same lines, same file name, same text in tracebacks, whether the worker adds the entry
    to the module it graded or a copy of the file ends with it."""
    import linecache
    import types

    from autograder.sandbox.stand_in_entry import ENTRY, SOURCE, add_entry

    copy = types.ModuleType("copy")
    exec(compile(source + SOURCE, "copy.py", "exec", dont_inherit=True), copy.__dict__)
    added = types.ModuleType("added")
    exec(compile(source, "added.py", "exec", dont_inherit=True), added.__dict__)
    add_entry(added, "added.py", source, None)
    a, b = copy.__dict__[ENTRY].__code__, added.__dict__[ENTRY].__code__
    assert a.co_firstlineno == b.co_firstlineno and a.co_code == b.co_code
    assert linecache.getline("added.py", b.co_firstlineno).startswith(f"def {ENTRY}(")
    cells = [(1, source), (4, "y = 2\n")]
    notebook = types.ModuleType("notebook")
    add_entry(notebook, "nb.ipynb", None, cells)
    assert notebook.__dict__[ENTRY].__code__.co_filename == "cell 5 of nb.ipynb"


def _in_process(module: dict):
    """`Runs` in this process, over a module namespace that holds `stand_ins.SOURCE`."""
    from autograder.sandbox.execute import run_call
    from autograder.sandbox.protocol import roundtrip_outcome

    def runs(function, args, kwargs, replaced, results):
        entry = module[stand_ins.ENTRY]
        return roundtrip_outcome(run_call(entry, (function, list(replaced), list(results),
                                                  *args), kwargs))
    return runs


def _record(function, *args):
    @dataclasses.dataclass
    class Record:
        function: str
        args: tuple
        kwargs: dict
    return Record(function, args, {})


def test_stand_ins_replay_a_correct_helper_and_stop_on_what_cannot_be_replayed():
    module: dict = {}
    exec(stand_ins.SOURCE, module)
    exec("def helper(x):\n    raise ValueError('broken helper')\n"
         "def caller(x):\n    return helper(x) * 2 + helper(x + 1)\n", module)
    asked = []

    def correct(name, args, kwargs):
        asked.append(name)
        return {"status": "ok", "output": args[0] + 10}

    runs = _in_process(module)
    x = torch.tensor([1.0, 2.0])
    out = stand_ins.run_with_correct_helpers(runs, correct, _record("caller", x), ["helper"])
    assert out["status"] == "ok" and torch.equal(out["output"], (x + 10) * 2 + (x + 11))
    assert asked == ["helper", "helper"]            # one round per call, each computed once
    assert module["helper"].__name__ == "helper"    # the student's own is back in place
    # A helper that the reference cannot run on what it was given: no outcome, no guess.
    failing = stand_ins.run_with_correct_helpers(
        runs, lambda *a: {"status": "error"}, _record("caller", x), ["helper"])
    assert failing is None
    # The student's own code raising past the stand-ins is the outcome, with its line.
    exec("def raises(x):\n    y = helper(x)\n    return y.reshape(7)\n", module)
    err = stand_ins.run_with_correct_helpers(runs, correct, _record("raises", x), ["helper"])
    assert err["status"] == "error" and err["error"]["function"] == "raises"
    # Code that calls differently each time cannot be replayed.
    exec("import itertools\n_n = itertools.count()\n"
         "def restless(x):\n    return helper(x + next(_n)) + helper(x)\n", module)
    assert stand_ins.run_with_correct_helpers(runs, correct, _record("restless", x),
                                              ["helper"]) is None
    # A caller that keeps asking is cut off after MAX_CALLS helper calls.
    exec("def greedy(x):\n    for _ in range(50):\n        x = helper(x)\n    return x\n",
         module)
    assert stand_ins.run_with_correct_helpers(runs, correct, _record("greedy", x),
                                              ["helper"]) is None


def test_the_added_function_holds_nothing_of_the_engine():
    module: dict = {"__name__": "attention"}
    exec(stand_ins.SOURCE, module)
    entry = module[stand_ins.ENTRY]
    assert "autograder" not in stand_ins.SOURCE.replace(stand_ins.ENTRY, "")
    assert set(entry.__globals__) <= {"__name__", "__builtins__", stand_ins.ENTRY}


# ------------------------------------------------------------------ silent shapes

def test_a_silently_wrong_shape_is_named_from_the_public_cases_too(grade, assignment):
    path = REALWORLD / "annotated_view_split_heads.py"
    for result in (grade(path), check_in_process(assignment, path)):
        first = _failing(result, "split_heads")[0]
        assert not first.hidden and first.diagnosis == ["fixed_rank"], first.message
        assert "`split_heads` returns a wrong shape on 2-D inputs, without an error, and " \
               "passes on 3-D ones" in first.hint, first.hint
        assert "reads the first dimension of a 2-D input as a batch" in first.hint
        assert "any number of leading dimensions" in first.hint


def test_public_cases_of_another_rank_come_from_the_lessons(assignment, numpy_assignment):
    """Each track's public cases hold the ranks a student's check needs to tell code written
    for one number of dimensions: 2-D and batched inputs for every question that takes them."""
    from autograder.authoring.mistake_table import public_records

    for a in (assignment, numpy_assignment):
        ranks: dict[str, set[int]] = {}
        for r in public_records(a):
            first = next((x for x in r.args if hasattr(x, "ndim")), None)
            if first is not None:
                ranks.setdefault(r.function, set()).add(first.ndim)
        for fn in ("scaled_dot_product_attention", "split_heads", "merge_heads",
                   "multi_head_attention", "transformer_block"):
            assert len(ranks[fn]) >= 2, (a.name, fn, ranks[fn])


# ------------------------------------------------------------------ constructs

SOURCE = '''
import math

def helper(k):
    """k.T would be wrong here"""
    return k.transpose(-2, -1)  # not k.T


def uses_T(q, k):
    return q @ k.T / math.sqrt(q.shape[-1])


def attention(q, k):
    return q @ helper(k)


class Heads:
    def forward(self, q, k):
        return uses_T(q, k)


def block(x):
    return Heads().forward(x, x)
'''


def test_constructs_are_read_from_the_code_a_call_runs_not_its_comments():
    assert not has_construct(r"\.T\b", code_for(SOURCE, "attention"))
    assert has_construct(r"\.T\b", code_for(SOURCE, "uses_T"))
    assert has_construct(r"\.T\b", code_for(SOURCE, "block"))     # through a class
    assert has_construct(r"\.T\b", None)                          # unknown code: no claim
    assert has_construct(r"\.T\b", code_for("def f(:\n  k.T", "f"))  # unparsable: whole file


def test_keys_transposed_without_dot_T_are_not_told_they_used_it(grade, tmp_path):
    """The same outcomes as `k.T` (every axis reversed) written without `.T`: the crash on 3-D
    inputs is the same error, which is no evidence of `.T`; where the code has `.T`, it is."""
    original = (SUBMISSIONS / "wrong" / "attention_k_dot_T.py").read_text()
    assert "k.T" in original
    with_T = grade(SUBMISSIONS / "wrong" / "attention_k_dot_T.py")
    assert any("key_dot_T" in (c.diagnosis or []) for c in _failing(with_T, "attention"))
    rewritten = tmp_path / "attention.py"
    rewritten.write_text(original.replace("k.T", "k.permute(*range(k.dim() - 1, -1, -1))"))
    without = grade(rewritten)
    assert [c.status for c in without.questions["attention"].cases] == \
           [c.status for c in with_T.questions["attention"].cases]
    assert not any("key_dot_T" in (c.diagnosis or []) for q in without.questions.values()
                   for c in q.cases)


def test_what_a_shipped_catalogue_knows_of_constructs_and_defaults(assignment,
                                                                   numpy_assignment):
    from autograder.diagnose import catalogue_for

    for a in (assignment, numpy_assignment):
        catalogue = catalogue_for(a)
        shipped = catalogue_from_data(catalogue_data(catalogue))
        for mid, m in catalogue.mistakes.items():
            assert shipped.mistakes[mid].construct == m.construct
            assert shipped.mistakes[mid].leaves_others_right == m.leaves_others_right
        assert catalogue.mistakes["key_dot_T"].construct
        assert catalogue.mistakes["softmax_default_axis"].leaves_others_right


# ------------------------------------------------------------------ defaults

@pytest.mark.parametrize("name, track", [("softmax_dim_none_default.py", "attention"),
                                         ("numpy_softmax_axis_none.py", "attention_numpy")])
def test_a_default_axis_of_none_is_named_in_softmax_and_in_the_attention_relying_on_it(
        name, track, grade, sandbox):
    result = grade(REALWORLD / name) if track == "attention" else \
        grade_submission(load_assignment(track), REALWORLD / name, sandbox)
    softmax = _failing(result, "softmax")
    # The cases that pass the axis pass; those without it name the default.
    assert all(c.diagnosis == ["softmax_default_axis"] for c in softmax)
    assert "def softmax(x, " in softmax[0].hint and "are right already" in softmax[0].hint
    attention = _failing(result, "attention")
    assert attention and all(c.diagnosis == ["softmax_default_axis"] for c in attention)


def test_a_softmax_fixed_to_one_axis_is_not_told_its_default_is_wrong(grade):
    """Always axis 1, whatever `dim` says: the calls that pass `dim` fail too, which a wrong
    default alone would leave right."""
    result = grade(REALWORLD / "softmax_axis_one.py")
    named = {m for c in result.questions["softmax"].cases for m in (c.diagnosis or [])}
    assert named and "softmax_default_axis" not in named, named


def _shaped(ndim: int, out_shape: tuple, want_shape: tuple, far: float):
    from types import SimpleNamespace
    return SimpleNamespace(args=(torch.zeros((2,) * ndim),), kwargs={}, far=far,
                           got={"status": "ok", "output": torch.zeros(out_shape)},
                           expected={"output": torch.zeros(want_shape)})


def test_a_wrong_shape_is_fixed_rank_only_where_another_rank_passes_and_none_of_its_own():
    from autograder.diagnose import fixed_rank, fixed_rank_detail
    from autograder.diagnose.fallback import CaseEvidence

    def ev(me, *others):
        return CaseEvidence("q", "f", me.args, me.kwargs, me.expected, me.got, False, {},
                            others=(me, *others))

    wrong = _shaped(2, (6, 8, 1, 64), (8, 6, 64), float("inf"))
    batched = _shaped(3, (2, 8, 6, 64), (2, 8, 6, 64), 0.0)
    assert fixed_rank(ev(wrong, batched))
    assert "returns a wrong shape on 2-D inputs, without an error, and passes on 3-D ones" \
        in fixed_rank_detail(ev(wrong, batched))
    assert not fixed_rank(ev(wrong))                       # no rank passes: no claim
    # A case of the same rank with the right shape: the shape is not about the rank.
    right_shape = _shaped(2, (8, 6, 64), (8, 6, 64), 50.0)
    assert not fixed_rank(ev(wrong, batched, right_shape))
    # The right shape with wrong values is another rule's business.
    assert not fixed_rank(ev(right_shape, batched))


def test_a_re_run_that_hangs_costs_one_question_time_and_changes_nothing(grade, tmp_path):
    """A block that loops forever once its attention works: the re-run is stopped at the
    stand-ins' own time limit, the cases keep what grading gave them, and nothing is named from
    it."""
    import time

    source = (SUBMISSIONS / "correct" / "reference_style.py").read_text() + '''

def multi_head_attention(x, params, n_heads, mask=None, context=None):
    raise ValueError("not written yet")


def transformer_block(x, params, n_heads, mask=None):
    h = multi_head_attention(x, params, n_heads, mask)
    while True:
        h = h + 0
'''
    path = tmp_path / "attention.py"
    path.write_text(source)
    start = time.monotonic()
    result = grade(path)
    elapsed = time.monotonic() - start
    block = result.questions["block"]
    crashed = [c for c in block.cases if c.status == "error"]
    assert crashed and all("not written yet" in c.message for c in crashed)
    assert not any("With a correct one in its place" in (c.hint or "") for c in crashed)
    assert elapsed < 60, elapsed        # grading plus at most one question's time (10 s)
