"""Several causes of one question: every cause named, in the order to fix them, found by a
search whose cost is bounded by counting; notes that say only what their evidence supports; the
NumPy catalogue at parity with the torch one."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import SUBMISSIONS

from autograder import diagnose
from autograder.model.assignment import load_assignment
from autograder.diagnose import Catalogue, causes
from autograder.grading.grade import grade_submission
from autograder.model.results import CaseResult, QuestionResult
from autograder.checking.problems import Advice, Problem
from autograder.grading.runner import OVERFLOW_ADVICE, SHAPE_ADVICE, add_dependency_notes
from autograder.model.status import CaseStatus

REALWORLD = SUBMISSIONS / "realworld"


@pytest.fixture(scope="module")
def tracks():
    return {name: load_assignment(name) for name in ("attention", "attention_numpy")}


@pytest.fixture(scope="module")
def graded(tracks, sandbox):
    cache = {}

    def grade(track: str, path: Path):
        key = (track, str(path))
        if key not in cache:
            cache[key] = grade_submission(tracks[track], Path(path), sandbox)
        return cache[key]

    return grade


def _failing(q):
    return [c for c in q.cases if c.status != CaseStatus.PASSED]


# ------------------------------------------------------------------ several causes, in order

def test_a_block_with_three_causes_names_all_of_them_in_the_order_to_fix_them(graded):
    q = graded("attention", REALWORLD / "nanogpt_block_pre_norm_gelu.py").questions["block"]
    named = [c.diagnosis for c in _failing(q)]
    # The unbatched cases crash at `B, T, C = x.size()`; the batched one runs and is wrong in
    # two ways that no single mistake reproduces.
    assert ["pre_norm", "ffn_gelu"] in named and ["fixed_rank"] in named, named
    both = next(c for c in _failing(q) if c.diagnosis == ["pre_norm", "ffn_gelu"])
    assert both.hint.startswith("likely mistakes, all together: a pre-norm block")
    assert "GELU instead of ReLU" in both.hint and "post-norm" in both.hint
    note = next(n for n in q.notes if "fix them in this order" in n)
    # What crashes first (until it runs, the other cases say little), then the computation's
    # order as the catalogue lists it.
    assert note.index("one number of dimensions") < note.index("pre-norm") < note.index("GELU")
    assert "3 causes" in note


def test_two_causes_in_numpy_code_are_named_case_by_case(graded):
    q = graded("attention_numpy",
               REALWORLD / "numpy_attention_axis_and_np_sqrt.py").questions["attention"]
    named = {tuple(c.diagnosis) for c in _failing(q)}
    # float32 cases come back float64 (np.sqrt of a number); float64 cases show the axis.
    assert named == {("weights_wrong_axis",), ("float64_promotion",)}, named
    assert any("fix them in this order" in n for n in q.notes)
    picogpt = graded("attention_numpy", REALWORLD / "numpy_picogpt_block_pre_norm_gelu.py")
    assert all(c.diagnosis == ["pre_norm", "ffn_gelu"]
               for c in _failing(picogpt.questions["block"]))
    # Every case names the same pair: its hint lists both, no separate order note.
    assert not any("fix them in this order" in n for n in picogpt.questions["block"].notes)


def test_a_boolean_mask_added_is_not_named_mask_ignored(graded):
    for track, name in (("attention", "d2l_mask_added.py"),
                        ("attention_numpy", "numpy_mask_added.py")):
        result = graded(track, REALWORLD / name)
        assert diagnose.diagnoses(result) == {"mask_added"}, name
        hint = next(c.hint for c in _failing(result.questions["mask"]) if c.hint)
        assert "adds 1 to each blocked score" in hint
    # A mask that is really never applied keeps its own name.
    ignored = graded("attention", SUBMISSIONS / "wrong" / "mask_ignored.py")
    assert diagnose.diagnoses(ignored) == {"mask_ignored"}


def test_inputs_cast_to_float32_are_not_blamed_on_a_float32_constant(graded, tmp_path):
    source = (SUBMISSIONS / "correct" / "reference_style.py").read_text()
    marker = "def layer_norm(x, gamma, beta, eps=1e-5):\n"
    assert marker in source
    cast = source.replace(marker, marker + (
        "    dtype = x.dtype\n"
        "    x, gamma, beta = x.float(), gamma.float(), beta.float()\n"
        "    return _layer_norm_body(x, gamma, beta, eps).to(dtype)\n\n\n"
        "def _layer_norm_body(x, gamma, beta, eps):\n"), 1)
    path = tmp_path / "attention.py"
    path.write_text(cast)
    result = graded("attention", path)
    block = result.questions["block"]
    assert block.score < block.max_score
    named = {m for c in _failing(block) for m in c.diagnosis}
    assert "float32_cast" in named and "float32_rounding" not in named, named
    # A float32 constant in float64 maths keeps the constant's name.
    constant = graded("attention", SUBMISSIONS / "wrong" / "idiom_floattensor_scale.py")
    assert "float32_rounding" in diagnose.diagnoses(constant)


# ------------------------------------------------------------------ the search, bounded

def _fake_runner(n_knobs: int, reproduces=lambda settings: False):
    """A runner whose catalogue has one family with `n_knobs` independent knobs, each a
    mistake; `reproduces(settings)` decides which merged settings explain the case. Counts the
    combinations run."""
    catalogue = Catalogue()
    family = catalogue.family("f")(lambda ref, x, **settings: settings)
    for i in range(n_knobs):
        family.mistake(f"m{i}", name=f"mistake {i}", hint="h", **{f"k{i}": True})
    runner = SimpleNamespace(catalogue=catalogue, calls={"f": frozenset({"f"})}, runs=0)

    def outcome(combo, index, record, grads=True):
        runner.runs += 1
        settings = combo.alternatives[0]["f"](None, None)
        return {"status": "ok", "output": 1.0 if reproduces(settings) else 2.0}

    runner.outcome = outcome
    runner.consistent = lambda combo, index, passed: True
    return runner


def _record():
    return SimpleNamespace(function="f", question="q", got={"status": "ok", "output": 1.0},
                           expected={"status": "ok", "output": 0.0}, tolerance=None,
                           want_grad=False, far=float("inf"))


def test_the_search_runs_a_bounded_number_of_combinations():
    runner = _fake_runner(40)      # C(40, 2) + C(40, 3) = 10660 combinations in all
    assert causes.search(runner, _record(), {}, {}) is None
    assert 0 < runner.runs <= causes.MAX_TRIES


def test_the_search_names_the_smallest_set_and_only_an_unambiguous_one():
    wanted = {"k1": True, "k3": True}
    runner = _fake_runner(6, lambda s: wanted.items() <= s.items())
    # {m1, m3} reproduces the case, and so does every superset: the smallest is named.
    assert causes.search(runner, _record(), {}, {}) == ["m1", "m3"]
    two_ways = _fake_runner(6, lambda s: s in ({"k1": True, "k3": True},
                                               {"k2": True, "k4": True}))
    assert causes.search(two_ways, _record(), {}, {}) is None
    # A crash is not searched: fixed-rank and None rules read those.
    crashed = _record()
    crashed.got = {"status": "error", "error": {"type": "ValueError", "message": "x"}}
    assert causes.search(_fake_runner(6, lambda s: True), crashed, {}, {}) is None


def test_two_settings_of_one_knob_do_not_combine():
    catalogue = Catalogue()
    family = catalogue.family("f")(lambda ref, x, **s: s)
    a = family.mistake("a", name="a", hint="h", norm="pre")
    b = family.mistake("b", name="b", hint="h", norm="after")
    c = family.mistake("c", name="c", hint="h", act="gelu")
    assert causes.merged_replacements([(a, 0), (b, 0)]) is None
    merged = causes.merged_replacements([(a, 0), (c, 0)])
    assert merged["f"](None, None) == {"norm": "pre", "act": "gelu"}


# ------------------------------------------------------------------ notes that point right

def _case(name, problem, status=CaseStatus.ERROR, where=""):
    """A failing case: `problem` a Problem, or a message in the case's own words."""
    c = CaseResult(name, 1.0, False, status)
    c.fail_with(problem if isinstance(problem, Problem) else Problem("error", problem), status)
    c.error_function = where
    return c


def _passed(name):
    return CaseResult(name, 1.0, False, CaseStatus.PASSED)


def test_a_shape_error_in_a_passing_helper_names_the_failing_one(tracks):
    assignment = tracks["attention"]
    line = ("multi_head_attention raised RuntimeError: size mismatch (line 24 of attention.py, "
            "in scaled_dot_product_attention: `scores = scores.masked_fill(mask, -inf)`)"
            + SHAPE_ADVICE + "; x may have several leading dimensions")
    shape_error = Problem.of(
        "error", function="multi_head_attention", type="RuntimeError", first="size mismatch",
        where=" (line 24 of attention.py, in scaled_dot_product_attention: "
              "`scores = scores.masked_fill(mask, -inf)`)",
        advice=Advice("shape", SHAPE_ADVICE + "; x may have several leading dimensions"))
    assert shape_error.public == line
    questions = {
        "attention": QuestionResult("attention", [_passed("a")]),
        "split_heads": QuestionResult("split_heads", [_case("s", "values differ",
                                                            CaseStatus.FAILED)]),
        "multi_head": QuestionResult("multi_head",
                                     [_case("m", shape_error,
                                            where="scaled_dot_product_attention")],
                                     called=["split_heads", "scaled_dot_product_attention"]),
    }
    add_dependency_notes(assignment, questions)
    message = questions["multi_head"].cases[0].message
    assert SHAPE_ADVICE not in message and "several leading dimensions" not in message
    assert "which passes its question" in message
    assert "this calls your `split_heads`, which fails question 'split_heads'" in message
    # When the line's own function fails its question, the line may well be the place.
    questions["attention"] = QuestionResult("attention", [_case("a", "values differ",
                                                                CaseStatus.FAILED)])
    questions["multi_head"].cases[0] = _case("m", shape_error,
                                             where="scaled_dot_product_attention")
    add_dependency_notes(assignment, questions)
    assert SHAPE_ADVICE in questions["multi_head"].cases[0].message


def test_overflow_advice_is_dropped_when_the_functions_called_pass(tracks):
    assignment = tracks["attention"]
    nan = Problem.of("nan", what="the output", kinds="NaN", n=3, numel=24, index="[0, 1]",
                     advice=Advice("overflow", OVERFLOW_ADVICE))

    def mask_question(softmax_passes):
        softmax = QuestionResult("softmax", [_passed("s") if softmax_passes else
                                             _case("s", "NaN", CaseStatus.FAILED)])
        mask = QuestionResult("attention", [_case("m", nan, CaseStatus.FAILED)],
                              called=["softmax"])
        questions = {"softmax": softmax, "attention": mask}
        add_dependency_notes(assignment, questions)
        return mask.cases[0].message

    assert OVERFLOW_ADVICE not in mask_question(True)
    assert "pass their own questions" in mask_question(True)
    assert OVERFLOW_ADVICE in mask_question(False)      # the helper may well overflow


def test_mask_none_is_named_when_the_masked_cases_fail_for_another_reason():
    import torch
    from autograder.diagnose import none_unhandled
    from autograder.diagnose.fallback import CaseEvidence

    def record(mask, message, code, etype="TypeError"):
        got = {"status": "error", "error": {"type": etype, "message": message, "code": code}}
        return SimpleNamespace(args=(torch.zeros(2, 2),), kwargs={"mask": mask}, got=got,
                               far=float("inf"))

    none = record(None, "unsupported operand type(s) for *: 'NoneType' and 'float'",
                  "scores = scores + mask * -1e9")
    masked_elsewhere = record(torch.ones(2, 2, dtype=torch.bool), "matmul: mismatch",
                              "scores = Q @ K.T", "ValueError")
    rule = none_unhandled("mask", 3)

    def ev(*others):
        return CaseEvidence("q", "f", none.args, none.kwargs, {}, none.got, False, {},
                            others=(none, *others))

    assert rule(ev(masked_elsewhere))
    # The masked cases fail the same way at the same line: None is not what this is about.
    same = record(torch.ones(2, 2, dtype=torch.bool), none.got["error"]["message"],
                  none.got["error"]["code"])
    assert not rule(ev(same))


# ------------------------------------------------------------------ the NumPy track at parity

# The mistakes the lessons invite, and those the NumPy track lacked: catalogued in both.
SHARED = {"pre_norm", "ffn_gelu", "softmax_sum_all", "softmax_global_max", "scale_by_d_model",
          "weights_wrong_axis", "key_dot_T", "mask_none_unhandled", "fixed_rank",
          "projection_wrong_weight", "scale_after_softmax", "softmax_subtracts_min",
          "layer_norm_wrong_axis", "residual_after_norm", "mask_added", "softmax_no_max",
          "unbiased_variance", "eps_outside_sqrt", "split_heads_no_swap", "mask_fill_zero"}


def test_both_catalogues_share_ids_and_names(tracks):
    torch_c = diagnose.catalogue_for(tracks["attention"]).mistakes
    numpy_c = diagnose.catalogue_for(tracks["attention_numpy"]).mistakes
    assert SHARED <= set(torch_c) and SHARED <= set(numpy_c), \
        (SHARED - set(torch_c), SHARED - set(numpy_c))
    for mid in set(torch_c) & set(numpy_c):
        assert torch_c[mid].name == numpy_c[mid].name, mid
    # Only NumPy's own: a float64 scalar that promotes float32 maths.
    assert "float64_promotion" in numpy_c
    # Hints speak each track's language.
    assert "np." in numpy_c["softmax_global_max"].hint
    assert "np." not in torch_c["softmax_global_max"].hint


@pytest.mark.parametrize("name", ["block_gelu_no_ffn_residual.py",
                                  "mha_d_model_scale_no_output_projection.py",
                                  "attention_fill_zero_no_scaling.py"])
def test_two_mistakes_in_one_function_are_both_named(graded, name):
    from autograder.yardsticks.evaluate import read_header, wanted

    path = SUBMISSIONS / "wrong" / name
    want = wanted(read_header(path)["diagnosis"])
    result = graded("attention", path)
    named = diagnose.diagnoses(result)
    assert named == want, (name, named)
    # Some case names both at once (no single mistake reproduces it).
    assert any(set(c.diagnosis) == want for q in result.questions.values() for c in q.cases)


def test_a_mistake_that_reproduces_the_outcome_beats_one_that_only_comes_closer():
    import torch
    from autograder.diagnose.fallback import decide

    catalogue = Catalogue()
    catalogue.variant("close", "f", name="close", hint="h")(lambda ref, x: x)
    catalogue.variant("exact", "f", name="exact", hint="h")(lambda ref, x: x)
    outputs = {"close": torch.tensor([1.001, 2.0]), "exact": torch.tensor([1.0, 2.0])}
    runner = SimpleNamespace(catalogue=catalogue, affects=lambda alt, fn: True,
                             calls={"f": frozenset({"f"})})
    runner.outcome = lambda m, i, record, grads=True: {"status": "ok",
                                                       "output": outputs[m.id]}
    runner.consistent = lambda m, i, passed: True
    record = SimpleNamespace(function="f", question="q", tolerance=None, want_grad=False,
                             far=1e6, got={"status": "ok", "output": torch.tensor([1.0, 2.0])})
    found = [catalogue.mistakes["close"], catalogue.mistakes["exact"]]
    assert decide(runner, record, found, {}, [record]).ids == ["exact"]
    # Both only close: ambiguous, nothing named.
    outputs["exact"] = torch.tensor([1.0, 2.002])
    assert decide(runner, record, found, {}, [record]) is None
