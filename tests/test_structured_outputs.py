"""Outputs of any structure, end to end, on a test assignment of their own
(`tests/assignments/decoding`): a tuple holding a dict and None (a decoding step with a KV
cache), a namedtuple, dicts in and a dataclass of dicts and an int out (an Adam step), a
Python float and a NumPy scalar (losses), and a backward pass fed the student's own forward
cache. Each planted submission (`submissions/`, its header says what it loses and what its
feedback says) loses that question only, with the place named, and never an internal error,
the same in the student's check, `grade` in the sandbox, Gradescope and otter."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers import ROOT, id_list, load_json, read_header, run_cli

from autograder.model.assignment import load_assignment
from autograder.grading.grade import check_in_process

FIXTURE = ROOT / "tests" / "assignments" / "decoding"
PLANTED = sorted((FIXTURE / "submissions").glob("*.py"))
QUESTIONS = ["cache", "moments", "adam", "loss", "backward"]


@pytest.fixture(scope="module")
def decoding():
    return load_assignment(FIXTURE)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, dict]:
    """`autograder grade` of every planted submission, in the sandbox: {file name: row}."""
    out = tmp_path_factory.mktemp("decoding") / "grades.json"
    r = run_cli("grade", "-a", str(FIXTURE), str(FIXTURE / "submissions"), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr      # 4 would mean a row needs the instructor
    return {Path(s["path"]).name: s for s in load_json(out)["submissions"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("decoding-built")
    r = run_cli("build", "-a", str(FIXTURE), "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def test_the_reference_scores_full_marks_and_the_template_nothing(tmp_path):
    out = tmp_path / "g.json"
    r = run_cli("grade", "-a", str(FIXTURE), str(FIXTURE / "reference.py"),
                str(FIXTURE / "template.py"), "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {Path(s["path"]).name: s for s in load_json(out)["submissions"]}
    assert rows["reference.py"]["score"] == rows["reference.py"]["max_score"] == 16
    assert rows["template.py"]["score"] == 0
    assert {q["status"] for q in rows["template.py"]["questions"].values()} == {"not attempted"}


@pytest.mark.parametrize("path", PLANTED, ids=[p.stem for p in PLANTED])
def test_each_planted_submission_loses_its_question_only_saying_where(path, graded):
    header, row = read_header(path), graded[path.name]
    assert row["error"] is None
    loses, keeps = id_list(header["loses"]), id_list(header["keeps"])
    assert sorted(loses + keeps) == sorted(QUESTIONS)
    for qid in keeps:
        assert row["questions"][qid]["status"] == "passed", row["questions"][qid]["feedback"]
    for qid in loses:       # the header's `says`: what the feedback on that question says
        q = row["questions"][qid]
        assert q["score"] < q["max_score"] and q["status"] != "internal error"
        assert header["says"] in q["feedback"], q["feedback"]
        assert "Traceback" not in q["feedback"] and "grader" not in q["feedback"]
    for q in row["questions"].values():
        assert all(c["status"] != "internal_error" for c in q["cases"])


def test_hidden_cases_name_the_place_but_never_the_expected_values(graded):
    summed = graded["loss_summed.py"]["questions"]["loss"]["cases"]
    hidden = next(c for c in summed if c["hidden"] and c["status"] == "failed")
    assert hidden["message"] == ("the loss returned by cross_entropy differs from the "
                                 "reference")
    t = graded["adam_forgets_t.py"]["questions"]["adam"]["cases"]
    assert next(c for c in t if not c["hidden"])["message"] == \
        "`new_state.t` returned by adam_step is 0, expected 1"
    assert all(c["message"] == "`new_state.t` returned by adam_step differs from the reference"
               for c in t if c["hidden"])


def test_the_students_check_gives_the_grades_verdict_on_public_cases(decoding, graded):
    for path in PLANTED:
        mine = check_in_process(decoding, path).to_json()
        for qid in QUESTIONS:
            public = [c for c in graded[path.name]["questions"][qid]["cases"] if not c["hidden"]]
            assert [(c["name"], c["status"], c["message"]) for c in
                    mine["questions"][qid]["cases"]] == \
                [(c["name"], c["status"], c["message"]) for c in public], (path.name, qid)


def test_check_prints_no_traceback_for_a_wrong_structure():
    for name in ("cache_empty.py", "adam_clears_state.py", "moments_plain_tuple.py"):
        r = run_cli("check", str(FIXTURE / "submissions" / name), "-a", str(FIXTURE))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr and "[FAIL]" in r.stdout


# ------------------------------------------------------------------ Gradescope and otter

def _gradescope(built: Path, submission: Path, root: Path) -> dict:
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(built / "decoding-gradescope.zip") as zf:
        zf.extractall(root / "source")
        for info in zf.infolist():   # zipfile drops permissions; Gradescope keeps them
            if info.external_attr >> 16:
                os.chmod(root / "source" / info.filename, info.external_attr >> 16)
    shutil.copy(submission, root / "submission" / "decoding.py")
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return load_json(root / "results" / "results.json")


def test_gradescope_gives_the_grades_scores(built, graded, tmp_path):
    for i, name in enumerate(["adam_state_dict.py", "cache_detached.py"]):
        results = _gradescope(built, FIXTURE / "submissions" / name, tmp_path / str(i))
        row = graded[name]
        assert results["score"] == row["score"]
        assert {t["name"]: t["score"] for t in results["tests"]} == \
            {q: v["score"] for q, v in row["questions"].items()}
        assert "the grader failed" not in json.dumps(results)


C50_ENV = {"CLASSROOM": "c", "ASSIGNMENT": "decoding", "SUBMISSION_TAG": "submit/1-abc",
           "COMMIT_URL": "https://example.org/c", "RELEASE_URL": "https://example.org/r",
           "REVIEW_URL": "https://example.org/v", "USERNAME": "s", "OWNER": "s",
           "ASSIGNMENT_TYPE": "individual", "CLASSROOM50_NO_INSTALL": "1"}


def test_classroom50_gives_the_public_cases_scores(built, graded, tmp_path):
    """The Classroom 50 folder grades the public cases (its bundle is public)."""
    name = "cache_tuple.py"
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(FIXTURE / "submissions" / name, repo / "decoding.py")
    git = ["git", "-c", "user.name=s", "-c", "user.email=s@example.org", "-C", str(repo)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "work"], check=True)
    runtime = tmp_path / "runtime"
    shutil.copytree(built / "decoding-classroom50", runtime)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(C50_ENV, CLASSROOM50_BUNDLE_DIR=str(runtime))
    r = subprocess.run([sys.executable, str(runtime / "autograder.py")], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {t["test-name"].split(" (public cases", 1)[0]: t["score"] for t in
            json.loads((repo / "result.json").read_text())["tests"]}
    public = {q: sum(c["score"] for c in v["cases"] if not c["hidden"])
              for q, v in graded[name]["questions"].items()}
    assert rows == public and rows["cache"] == 0


def _otter(built: Path, submission: Path, out: Path) -> dict:
    out.mkdir(parents=True)
    shutil.copy(submission, out / "decoding.py")
    r = subprocess.run([str(Path(sys.executable).parent / "otter"), "run", "-a",
                        str(built / "decoding-otter.zip"), "-o", str(out), "--no-logo",
                        str(out / "decoding.py")], cwd=out, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return load_json(out / "results.json")


@pytest.mark.slow
def test_otter_gives_the_grades_scores_without_a_raw_exception(built, graded, tmp_path):
    picked = ["cache_empty.py", "adam_clears_state.py", "forward_returns_y_only.py",
              "loss_none.py"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda i: _otter(built, FIXTURE / "submissions" / picked[i],
                                              tmp_path / f"o{i}"), range(len(picked))))
    for name, results in zip(picked, runs):
        scores = {t["name"]: t["score"] for t in results["tests"] if t["name"] in QUESTIONS}
        assert scores == {q: v["score"] for q, v in graded[name]["questions"].items()}, name
        text = json.dumps(results)
        # Every failure is a check's own message (otter shows `CheckFailed: ...`), no other
        # exception of the grader or of the question files.
        assert "TypeError" not in text and "KeyError" not in text, name
        assert read_header(FIXTURE / "submissions" / name)["says"].replace('"', '\\"') in text


# ------------------------------------------------------------------ the parts, one by one

def test_records_and_numpy_scalars_travel_as_data_and_forgeries_do_not():
    import collections
    import dataclasses

    from autograder.sandbox.wire import Record, WireError, decode, encode

    Pair = collections.namedtuple("Pair", "a b")

    @dataclasses.dataclass
    class State:
        m: dict
        t: int

    buffers: list[bytes] = []
    node = encode((Pair(torch.ones(2), None), State({"w": np.float32(1.5)}, 3)), buffers)
    pair, state = decode(node, buffers)
    assert isinstance(pair, Record) and pair.kind == "namedtuple" and pair.type_name == "Pair"
    a, b = pair
    assert torch.equal(a, torch.ones(2)) and b is None and pair[1] is None
    assert isinstance(state, Record) and state.kind == "dataclass" and state.t == 3
    assert type(state.m["w"]) is np.float32 and state.m["w"] == np.float32(1.5)
    forged = [
        {"t": "record", "kind": "class", "type": "X", "fields": []},
        {"t": "record", "kind": "dataclass", "type": "X", "fields": [["a", {"t": "none"}],
                                                                     ["a", {"t": "none"}]]},
        {"t": "record", "kind": "dataclass", "type": "X", "fields": {"a": {"t": "none"}}},
        {"t": "scalar", "kind": "float", "v": 1.0, "dtype": "object"},
        {"t": "scalar", "kind": "int", "v": 300, "dtype": "int8"},
        {"t": "scalar", "kind": "float", "v": 1.0, "dtype": "int64"},
    ]
    for bad in forged:
        with pytest.raises(WireError):
            decode(bad, [])
    too_many = encode({str(i): i for i in range(300)}, [])
    assert too_many["t"] == "other" and "too many" in too_many["type"]
    with pytest.raises(WireError):
        decode({"t": "record", "kind": "dataclass", "type": "X",
                "fields": [[str(i), {"t": "none"}] for i in range(300)]}, [])


def test_what_an_outcome_says_about_changed_inputs_is_checked():
    from autograder.sandbox.protocol import decode_outcome
    from autograder.sandbox.wire import WireError

    honest = {"status": "ok", "output": {"t": "none"},
              "changes": [{"path": "0/1", "how": "removed", "keys": ["m"]}],
              "unconnected": ["1/k"], "chained": {"function": "f", "missing": "[1]"}}
    out = decode_outcome(honest, [])
    assert out["changes"] == honest["changes"] and out["unconnected"] == ["1/k"]
    for bad in ({"changes": [{"path": "0", "how": "exploded"}]},
                {"changes": [{"path": "0", "how": "resized", "before": -1, "after": 2}]},
                {"changes": "all"}, {"unconnected": [1]}, {"chained": ["f"]}):
        with pytest.raises(WireError):
            decode_outcome({**honest, **bad}, [])


def test_changed_inputs_are_told_apart():
    from autograder.sandbox.execute import run_call

    def appends(xs, state):
        xs.append(torch.zeros(1))
        state["t"] = state["t"] + 1
        return torch.zeros(1)

    out = run_call(appends, ([torch.ones(1)], {"t": 0}), {})
    assert out["mutated"] == ["0/0", "0/1/t"]
    assert out["changes"] == [{"path": "0/0", "how": "resized", "before": 1, "after": 2},
                              {"path": "0/1/t", "how": "rebound"}]

    def clears(state):
        state.clear()
        return 0

    assert run_call(clears, ({"m": 1, "v": 2},), {})["changes"] == \
        [{"path": "0/0", "how": "removed", "keys": ["m", "v"]}]


def test_list_changes_are_explained_as_list_changes():
    from autograder.checking.checks import Labels, compare_mutation

    p = compare_mutation(["0/0"], Labels("push", ["tokens"]), "tensors",
                         [{"path": "0/0", "how": "resized", "before": 2, "after": 3}],
                         (([1, 2, 3],), {}))[0]
    assert p.public.startswith("your function changed the length of its input `tokens` (from "
                               "2 to 3 items): the caller's `tokens` changes too (`.append()`")
    assert "`tokens = tokens + [...]`" in p.public


def test_numbers_are_compared_with_their_dtypes_tolerance_and_nan_is_nans_equal():
    from autograder.checking.outputs import compare_number

    assert compare_number(1.0, 1.0 + 1e-12, "x") == []
    assert compare_number(1.0, 1.0 + 1e-6, "x")[0].kind == "values"
    assert compare_number(np.float32(1.0), np.float32(1.00001), "x") == []
    assert compare_number(float("nan"), float("nan"), "x") == []
    assert compare_number(1.0, float("nan"), "x")[0].kind == "nan"
    assert compare_number(np.float64(1.0), np.float32(1.0), "x")[0].kind == "dtype"
    loose = {"float64": (1e-5, 1e-6)}
    assert compare_number(1.0, 1.0 + 1e-6, "x", tolerance=loose) == []


def test_tolerances_per_place_in_the_output():
    from autograder.checking.paths import OutputNames, case_tolerance, tolerance_at
    from autograder.sandbox.execute import Field
    from autograder.sandbox.wire import Record

    names = OutputNames("f", ["loss", "state"])
    expected = (1.0, Record("dataclass", "S", {"m": {"w": torch.ones(1)}, "t": 1}))
    table, bad = case_tolerance({"float32": (1e-3, 1e-4)},
                                {"loss": {"float64": (1e-5, 1e-6)},
                                 'state.m["w"]': {"float32": (0.1, 0.1)}, "nothing": {}},
                                expected, names)
    assert bad == ["nothing"]
    assert tolerance_at(table, (0,))["float64"] == (1e-5, 1e-6)
    assert tolerance_at(table, (1, Field("m"), "w"))["float32"] == (0.1, 0.1)
    assert tolerance_at(table, (1, Field("t")))["float32"] == (1e-3, 1e-4)
    assert names((1, Field("m"), "w")) == '`state.m["w"]` returned by f'
    assert names((1,)) == "the state returned by f" and names(()) == "the output of f"


def test_naming_compares_as_grading_does():
    from autograder.diagnose.symptoms import distance

    ok = {"status": "ok", "output": (float("nan"), np.float32(2.0)), "mutated": []}
    close = {"status": "ok", "output": (float("nan"), np.float32(2.00001)), "mutated": []}
    far = {"status": "ok", "output": (float("nan"), np.float32(2.1)), "mutated": []}
    assert distance(ok, close, grads=False) <= 1.0
    assert distance(ok, far, grads=False) > 1.0 and math.isfinite(distance(ok, far,
                                                                            grads=False))
    other = {"status": "ok", "output": (float("nan"), np.float64(2.0)), "mutated": []}
    assert distance(ok, other, grads=False) == float("inf")


def test_the_check_runs_in_the_context_it_is_handed(decoding):
    from autograder.cases import Question, snapshot, tensor
    from autograder.checking.context import NOTEBOOK, CheckContext, Mode, Recording, bind, unbind

    assert unbind(len) == (len, NOTEBOOK)          # otter's bare value: the notebook mode
    recording = Recording()
    context = CheckContext(Mode.RECORD, recording=recording)
    bound = bind({"moments": None}, context)
    assert unbind(bound["moments"]) == (None, context)
    # Recording needs no student: the reference's outcome is stored for the snapshot.
    q = Question("moments", assignment=decoding)
    q.check("moments", bound["moments"], tensor([[1.0, 3.0]]), expected=snapshot("probe"))
    assert set(recording.store["moments"]) == {"probe"}
    # The same check handed a GRADE context compares instead (and needs a function).
    with pytest.raises(Exception) as failed:
        q.check("moments", bind({"m": None}, CheckContext(Mode.GRADE))["m"],
                tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]), expected=snapshot("rows"))
    assert "is not defined in your file" in str(failed.value)
    with pytest.raises(ValueError):
        CheckContext(Mode.GRADE, recording=recording)
