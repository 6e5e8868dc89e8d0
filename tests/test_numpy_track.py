"""The NumPy track (`attention_numpy`): the same engine grading NumPy functions and knowledge-check
answers, through every route the torch track has (check, grade, notebook, build, Classroom,
reports)."""
import ast
import base64
import json
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from otter.test_files.exception_test import ExceptionTestFile

from helpers import (ROOT, SUBMISSIONS, assert_loses_and_keeps, id_list, load_json, max_points,
                     read_header,
                      cli_in_process, run_cli, run_workflow_step, snapshot_differences)

from autograder.model.assignment import load_assignment
from autograder.platforms.build import build_student
from autograder.platforms.actions.run import workflow_yaml
from autograder.grading.grade import check_in_process, grade_submission
from autograder.platforms.notebook.build import notebook_path, notebook_text
from autograder.feedback.plain import question_feedback
from autograder.feedback.contract import submission_json

NAME = "attention_numpy"
QUESTIONS = ["softmax", "attention", "mask", "split_heads", "multi_head", "block", "concepts"]
REFERENCE = ROOT / "reference" / "attention_numpy.py"
TEMPLATE = ROOT / "student_template" / "attention_numpy.py"
CORPUS = SUBMISSIONS / "numpy"
WRONG = sorted((CORPUS / "wrong").glob("*.py"))
CORRECT = sorted((CORPUS / "correct").glob("*.py"))
RIGHT_ANSWERS = {
    "head_weights_shape_6_tokens": "(6, 6)", "table_growth_when_tokens_double": "4",
    "head_size_512_dims_8_heads": "64", "weights_per_head_196_patches": "38416",
    "weights_row_sum": "1", "shuffling_changes_more_than_order": "False",
}


@pytest.fixture(scope="module")
def np_assignment():
    return load_assignment(NAME)


@pytest.fixture(scope="module")
def np_grade(np_assignment, sandbox):
    def _grade(path, **kw):
        return grade_submission(np_assignment, Path(path), sandbox, **kw)
    return _grade


@pytest.fixture(scope="module")
def graded(graded_corpus):
    return graded_corpus(NAME)       # the corpus, graded once for the suite (conftest.py)


def _with_answers(source: str, **answers) -> str:
    """The reference's source with some knowledge-check lines replaced (or removed: None)."""
    lines = []
    for line in source.splitlines():
        name = line.split(" = ")[0]
        if name in answers:
            if answers[name] is not None:
                lines.append(f"{name} = {answers[name]}")
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the anchors

def test_the_assignment_declares_functions_and_answers(np_assignment):
    assert [q.id for q in np_assignment.questions] == QUESTIONS
    assert list(np_assignment.answers) == list(RIGHT_ANSWERS)
    assert np_assignment.question("concepts").answers == list(RIGHT_ANSWERS)
    assert set(np_assignment.api) == {"softmax", "causal_mask", "scaled_dot_product_attention",
                                      "split_heads", "merge_heads", "multi_head_attention",
                                      "layer_norm", "transformer_block"}
    assert np_assignment.api["softmax"].params == ["x", "axis"]


def test_reference_scores_full_marks_in_the_sandbox(np_grade):
    result = np_grade(REFERENCE)
    assert result.error is None
    assert list(result.questions) == QUESTIONS
    for q in result.questions.values():
        assert q.status == "passed", question_feedback(q)
        assert q.score == q.max_score > 0
        assert any(not c.hidden for c in q.cases)
        if q.id != "concepts":
            assert any(c.hidden for c in q.cases), q.id


def test_template_is_not_attempted_everywhere(np_grade):
    result = np_grade(TEMPLATE)
    assert result.score == 0 and result.error is None
    for q in result.questions.values():
        assert q.status == "not attempted", question_feedback(q)
        assert all(c.status == "not_attempted" for c in q.cases)
    concepts = question_feedback(result.questions["concepts"])
    for name in RIGHT_ANSWERS:
        assert f"`{name}` is still None" in concepts


def test_public_checks_in_process(np_assignment):
    ref = check_in_process(np_assignment, REFERENCE)
    assert all(q.status == "passed" for q in ref.questions.values())
    assert not any(c.hidden for q in ref.questions.values() for c in q.cases)
    template = check_in_process(np_assignment, TEMPLATE)
    assert {q.status for q in template.questions.values()} == {"not attempted"}


def test_public_cases_use_the_lessons_numpy_examples(np_assignment):
    snaps = np_assignment.snapshot_dir

    def data(question, key, item=None):
        node = json.loads((snaps / f"{question}.json").read_text())[key]["output"]
        return (node if item is None else node["items"][item])["data"]

    assert [round(w, 3) for w in data("attention", "lesson_three_tokens", 1)] == [
        0.401, 0.198, 0.401, 0.198, 0.401, 0.401, 0.248, 0.248, 0.503]
    assert [round(o, 3) for o in data("attention", "lesson_three_tokens", 0)] == [
        0.802, 0.599, 0.599, 0.802, 0.752, 0.752]
    assert [round(w, 2) for w in data("attention", "lesson_red_block_box", 1)] == [
        0.51, 0.31, 0.19, 0.31, 0.51, 0.19, 0.27, 0.27, 0.45]
    assert [round(v, 3) for v in data("softmax", "lesson_small")] == [0.09, 0.245, 0.665]
    assert [round(v, 3) for v in data("softmax", "lesson_large")] == [0.0, 0.0, 1.0]
    assert [round(v, 3) for v in data("mask", "lesson_masked_weights", 1)] == [
        1.0, 0.0, 0.0, 0.33, 0.67, 0.0, 0.248, 0.248, 0.503]
    split = json.loads((snaps / "split_heads.json").read_text())["lesson_split"]
    assert split["output"]["shape"] == [8, 6, 64] and split["output"]["t"] == "ndarray"
    # NumPy in, NumPy out, and no gradients recorded.
    assert all(e["grads"] is None and e["upstream"]["t"] == "none"
               for f in snaps.glob("*.json") if f.name != "concepts.json"
               for e in json.loads(f.read_text()).values())


def test_snapshots_are_up_to_date_and_keep_answers_as_digests(np_assignment):
    from autograder.checking.context import Mode, Recording
    from autograder.grading.runner import grade_functions

    ref = np_assignment.load_reference()
    env = {n: getattr(ref, n) for n in [*np_assignment.api, *np_assignment.answers]}
    recording = Recording()
    grade_functions(np_assignment, "reference", lambda q: env, include_hidden=False, mode=Mode.RECORD,
                    recording=recording)
    for qid, entries in recording.store.items():
        committed = json.loads((np_assignment.snapshot_dir / f"{qid}.json").read_text())
        assert snapshot_differences(json.loads(json.dumps(entries)), committed,
                                    recording.tolerances.get(qid)) == [], qid
    text = (np_assignment.snapshot_dir / "concepts.json").read_text()
    assert "38416" not in text and "(6, 6)" not in text and "[6, 6]" not in text
    assert all(e["digest"].startswith("sha256:") for e in json.loads(text).values())


# ------------------------------------------------------------------ the corpus

def test_corpus_covers_every_question():
    assert len(WRONG) >= 8 and len(CORRECT) >= 2
    covered = set()
    for f in WRONG:
        covered |= set(id_list(read_header(f)["loses"]))
    assert covered == set(QUESTIONS)


@pytest.mark.parametrize("path", WRONG, ids=lambda p: p.stem)
def test_wrong_submission_loses_the_right_questions(path, graded):
    header = read_header(path)
    result = graded[path.name]
    loses = assert_loses_and_keeps(result, header, QUESTIONS)
    words = {"forbidden": "write yourself", "nan": "NaN", "in place": "in place",
             "dtype": "float64", "shape": "np.swapaxes", "values": "differ",
             "answer": "is not right"}
    first = question_feedback(result.questions[loses[0]])
    assert words[header["hint"]] in first, first


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_other_correct_solutions_keep_full_marks(path, graded):
    result = graded[path.name]
    for q in result.questions.values():
        assert q.status == "passed", f"{path.name} {q.id}: {question_feedback(q)}"


def test_hidden_feedback_never_quotes_expected_values(graded):
    for result in graded.values():
        for q in result.questions.values():
            for c in q.cases:
                if c.hidden and c.status != "passed":
                    assert "(at index" not in c.message and "expected 0." not in c.message


def test_numpy_specific_feedback(graded):
    dtype = question_feedback(graded["attention_np_sqrt_float64.py"].questions["attention"])
    assert "expected dtype float32, got float64" in dtype and "np.sqrt" in dtype
    inplace = question_feedback(graded["softmax_inplace_subtract.py"].questions["softmax"])
    assert "changed its input `x` in place" in inplace and "new arrays" in inplace
    shape = question_feedback(graded["attention_k_dot_T.py"].questions["attention"])
    assert "line" in shape and "k.T" in shape and "np.swapaxes(k, -2, -1)" in shape


def test_torch_on_the_numpy_track(np_grade, tmp_path):
    """A torch tensor returned is named as such; torch's softmax is the shortcut here too."""
    path = tmp_path / "attention_numpy.py"
    path.write_text(REFERENCE.read_text().replace(
        "    return e / e.sum(axis=axis, keepdims=True)",
        "    import torch\n    return torch.from_numpy(e / e.sum(axis=axis, keepdims=True))"))
    feedback = question_feedback(np_grade(path, questions=["softmax"]).questions["softmax"])
    assert "should be a NumPy array, but you returned a torch tensor" in feedback, feedback
    path.write_text(REFERENCE.read_text().replace(
        "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)",
        "    import torch\n    return torch.softmax(torch.from_numpy(x), dim=axis).numpy()"))
    q = np_grade(path, questions=["softmax"]).questions["softmax"]
    assert q.status == "forbidden call" and "`torch.softmax`" in question_feedback(q)


# ------------------------------------------------------------------ the library shortcut

def test_scipy_softmax_is_a_forbidden_call_in_every_route(np_assignment, graded):
    path = CORPUS / "wrong" / "softmax_scipy_shortcut.py"
    sandboxed = graded[path.name].questions["softmax"]
    assert sandboxed.status == "forbidden call"
    assert "`scipy.special.softmax`" in question_feedback(sandboxed)
    local = check_in_process(np_assignment, path).questions["softmax"]
    assert local.status == "forbidden call"
    # otter: the student's module was imported (binding scipy's function) before the check.
    import importlib.util

    spec = importlib.util.spec_from_file_location("attention_numpy_otter", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tf = ExceptionTestFile.from_file(str(np_assignment.question("softmax").test_file))
    tf.run(vars(module))
    assert tf.grade == 0 and "scipy.special.softmax" in tf.test_case_results[0].message


def test_scipy_softmax_is_allowed_outside_its_question(np_grade, tmp_path):
    """The shortcut is forbidden in `softmax` only: attention may call scipy's softmax."""
    path = tmp_path / "attention_numpy.py"
    src = REFERENCE.read_text().replace(
        "    weights = softmax(scores, axis=-1)",
        "    import scipy.special\n    weights = scipy.special.softmax(scores, axis=-1)")
    path.write_text(src)
    result = np_grade(path, questions=["softmax", "attention"])
    assert result.questions["softmax"].status == "passed"
    assert result.questions["attention"].status == "passed", \
        question_feedback(result.questions["attention"])


def test_importing_the_shortcut_under_another_path_is_caught(np_assignment, tmp_path):
    path = tmp_path / "attention_numpy.py"
    path.write_text(REFERENCE.read_text().replace(
        "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)",
        "    from scipy.special._logsumexp import softmax as s\n    return s(x, axis=axis)"))
    result = check_in_process(np_assignment, path, questions=["softmax"])
    assert result.questions["softmax"].status == "forbidden call"


# ------------------------------------------------------------------ knowledge checks

def test_right_answers_written_differently_pass(graded):
    # einsum_style.py answers [6, 6], 2 * 2, 512 // 8, np.int64(196) ** 2, 1.0, np.bool_(False).
    assert graded["einsum_style.py"].questions["concepts"].status == "passed"


def test_wrong_answers_get_hints_that_do_not_give_the_answer(graded):
    q = graded["concepts_wrong_answers.py"].questions["concepts"]
    assert q.score == 1 and q.status == "partial"
    by_name = {}
    for c in q.cases:
        if c.status != "passed":
            assert c.status == "failed" and "is not right" in c.message
            name = c.message.split("`")[1]
            by_name[name] = c.message.split("is not right:", 1)[1]
    assert set(by_name) == set(RIGHT_ANSWERS) - {"weights_row_sum"}
    for name, hint in by_name.items():
        right = RIGHT_ANSWERS[name]
        assert right not in hint, (name, hint)
        assert len(hint) > 20
    assert "4" not in by_name["table_growth_when_tokens_double"]
    assert "columns" in by_name["table_growth_when_tokens_double"]


def test_missing_and_malformed_answers(np_assignment, np_grade, tmp_path):
    path = tmp_path / "attention_numpy.py"
    path.write_text(_with_answers(REFERENCE.read_text(), head_weights_shape_6_tokens=None,
                                  weights_row_sum="'one'",
                                  table_growth_when_tokens_double="np.zeros(10**6)",
                                  head_size_512_dims_8_heads="lambda: 64"))
    for result in (np_grade(path, questions=["concepts"]),
                   check_in_process(np_assignment, path, questions=["concepts"])):
        cases = dict(zip(RIGHT_ANSWERS, result.questions["concepts"].cases))
        missing = cases["head_weights_shape_6_tokens"]
        assert missing.status == "error"
        assert "is not defined in your file" in missing.message
        assert "should be a number, but it is 'one'" in cases["weights_row_sum"].message
        assert "should be a number" in cases["table_growth_when_tokens_double"].message
        assert "should be a number" in cases["head_size_512_dims_8_heads"].message
        assert cases["weights_per_head_196_patches"].status == "passed"
    sandboxed = np_grade(path, questions=["concepts"]).questions["concepts"]
    big = dict(zip(RIGHT_ANSWERS, sandboxed.cases))["table_growth_when_tokens_double"]
    assert "too large" in big.message


# ------------------------------------------------------------------ notebook

def test_committed_notebook_is_what_the_generator_makes(np_assignment):
    assert notebook_path(np_assignment) == TEMPLATE.with_suffix(".ipynb")
    assert notebook_path(np_assignment).read_text() == notebook_text(np_assignment), \
        "run `python -m autograder.platforms.notebook attention_numpy`"
    nb = nbformat.read(str(notebook_path(np_assignment)), as_version=4)
    ids = [c.get("id") for c in nb.cells]
    assert ids.index("concepts-answers") == ids.index("concepts-check") - 1
    answers = nb.cells[ids.index("concepts-answers")].source
    assert [n.targets[0].id for n in ast.parse(answers).body] == list(RIGHT_ANSWERS)


def test_template_notebook_check_cells_say_not_attempted(np_assignment, tmp_path):
    bundle = build_student(np_assignment, tmp_path)
    nb = nbformat.read(str(bundle / "attention_numpy.ipynb"), as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(bundle)}}).execute()
    shown = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            qid = cell.source.split('"')[1]
            shown[qid] = "\n".join(o.get("data", {}).get("text/plain", "") or o.get("text", "")
                                   for o in cell.outputs)
    assert list(shown) == QUESTIONS
    for qid, text in shown.items():
        if qid == "concepts":
            assert "is still None" in text, text
        else:
            assert "is not implemented yet" in text, (qid, text)


def test_a_notebook_submission_grades_like_the_py_file(np_assignment, np_grade, tmp_path):
    path = tmp_path / "attention_numpy.ipynb"
    source = (CORPUS / "wrong" / "concepts_wrong_answers.py").read_text()
    path.write_text(notebook_text(np_assignment, source))
    as_notebook = submission_json(np_grade(path))
    as_py = submission_json(np_grade(CORPUS / "wrong" / "concepts_wrong_answers.py"))
    assert {q: v["score"] for q, v in as_notebook["questions"].items()} == \
        {q: v["score"] for q, v in as_py["questions"].items()}


# ------------------------------------------------------------------ build, CLI, Classroom, report

def test_build_ships_no_reference_and_no_hidden_case(tmp_path):
    r = run_cli("build", "-a", NAME, "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    student = tmp_path / f"{NAME}-student"
    names = {p.relative_to(student).as_posix() for p in student.rglob("*") if p.is_file()}
    assert "attention_numpy.py" in names and "attention_numpy.ipynb" in names
    assert not any(n.startswith(("reference", f"assignments/{NAME}/reference")) for n in names)
    texts = "\n".join((student / n).read_text(errors="replace") for n in names
                      if n.endswith((".py", ".json", ".toml", ".ipynb", ".md", ".txt"))
                      and not n.startswith("autograder/"))
    assert "hidden=True" not in texts and "head_size_512_dims_8_heads = 64" not in texts
    concepts = (student / "assignments" / NAME / "snapshots" / "concepts.json").read_text() + \
        (student / "assignments" / NAME / "tests" / "concepts.py").read_text()
    assert "38416" not in concepts and "(6, 6)" not in concepts
    for f in (student / "assignments" / NAME / "tests").glob("*.py"):
        tf = ExceptionTestFile.from_file(str(f))
        assert not any(tc.hidden for tc in tf.test_cases)
    # Students get ranges (they keep their own numpy and scipy); graders keep the pins.
    assert "scipy>=" in (student / "requirements.txt").read_text()
    r = run_cli("check", "attention_numpy.py", cwd=student)
    assert r.returncode == 1 and "[TODO] concepts" in r.stdout, r.stdout + r.stderr
    with zipfile.ZipFile(tmp_path / f"{NAME}-gradescope.zip") as z:
        assert f"assignments/{NAME}/reference/attention_numpy.py" in z.namelist()
        assert "scipy==" in z.read("requirements.txt").decode()
    assert (tmp_path / f"{NAME}-otter.zip").is_file()


def test_cli_check_picks_the_numpy_assignment_from_the_file_name(tmp_path):
    shutil.copy(CORPUS / "wrong" / "causal_mask_tril.py", tmp_path / "attention_numpy.py")
    r = run_cli("check", str(tmp_path / "attention_numpy.py"))
    assert r.returncode == 1
    assert "Attention from scratch (NumPy)" in r.stdout and "[PART] mask" in r.stdout


def test_actions_grading_step_gives_the_public_grade(np_assignment, tmp_path):
    """The student repository's grading step, run there: the public cases' points."""
    wf = yaml.safe_load(workflow_yaml(np_assignment, assignment_dir=str(np_assignment.root)))
    install = next(s["run"] for s in wf["jobs"]["grade"]["steps"]
                   if s["name"] == "Install the grader")
    assert "scipy" in install
    repo = build_student(np_assignment, tmp_path)
    wf = yaml.safe_load((repo / ".github" / "workflows" / "classroom.yml").read_text())
    grade = next(s for s in wf["jobs"]["grade"]["steps"] if s.get("id") == "grade")
    sub = CORPUS / "wrong" / "concepts_wrong_answers.py"
    shutil.copy(sub, repo / "attention_numpy.py")
    out = tmp_path / "github_output"
    r = run_workflow_step(grade["run"], repo, tmp_path, {"GITHUB_OUTPUT": str(out)})
    assert r.returncode == 1, r.stderr          # points missing
    values = dict(line.split("=", 1) for line in out.read_text().splitlines())
    total = sum(t["score"] for q in QUESTIONS
                for t in json.loads(base64.b64decode(values[q.replace("_", "")]))["tests"])
    # 31 public points (25 of the functions' cases, 6 of the knowledge checks), 5 lost.
    assert total == float(values["score"]) == check_in_process(np_assignment, sub).score \
        == 31 - 5


def test_class_report(tmp_path):
    cls = tmp_path / "class"
    for student, f in (("ada", CORRECT[0]), ("bo", CORPUS / "wrong" / "softmax_scipy_shortcut.py"),
                       ("cy", TEMPLATE)):
        (cls / student).mkdir(parents=True)
        shutil.copy(f, cls / student / "attention_numpy.py")
    out = tmp_path / "out"
    r = cli_in_process("grade", "-a", NAME, str(cls), "--out", str(out), "--json",
                       str(tmp_path / "g.json"))
    assert r.returncode == 0, r.stderr
    data = load_json(tmp_path / "g.json")
    scores = {Path(s["path"]).parent.name: s["score"] for s in data["submissions"]}
    # 53 in all: 47 for the functions' cases, 6 for the knowledge checks; the library softmax
    # costs the softmax question.
    assert scores == {"ada": 53, "bo": 53 - max_points("softmax", NAME), "cy": 0}
    assert (out / "report.html").is_file() and (out / "grades.csv").is_file()
    feedback = {p.name: p.read_text() for p in (out / "feedback").iterdir()}
    cy = next(text for name, text in feedback.items() if name.startswith("cy"))
    assert "is still None" in cy and "NotImplementedError" in cy


# ------------------------------------------------------------------ refusals before the code

FORKED_HELPER = '''
import os as _os

_from_worker, _to_helper = _os.pipe()
_from_helper, _to_worker = _os.pipe()
if _os.fork() == 0:          # a helper forked before any question runs: scipy's own softmax
    import scipy.special
    try:
        while True:
            n = int.from_bytes(_os.read(_from_worker, 8), "little")
            x = np.frombuffer(_os.read(_from_worker, n), dtype=np.float64)
            _os.write(_to_worker, scipy.special.softmax(x).tobytes())
    finally:
        _os._exit(0)


def softmax(x, axis=-1):
    flat = np.ascontiguousarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    rows = []
    for row in flat:
        _os.write(_to_helper, len(row.tobytes()).to_bytes(8, "little") + row.tobytes())
        rows.append(np.frombuffer(_os.read(_from_helper, row.nbytes), dtype=np.float64))
    return np.stack(rows).reshape(x.shape).astype(x.dtype)
'''
LIBRARY_ROUTES = {
    "refs": "    import torch, torch._refs\n"
            "    return torch._refs.softmax(torch.from_numpy(x), axis).numpy()",
    "decomposition": "    import torch, torch._decomp\n"
                     "    f = torch._decomp.decomposition_table[torch.ops.aten._softmax.default]\n"
                     "    return f(torch.from_numpy(x), axis, False).numpy()",
}


def test_a_helper_forked_at_import_is_hard_evidence_on_the_numpy_track(np_grade, tmp_path):
    """Attack 1 on this track: the fork is refused at import, every question is withheld."""
    path = tmp_path / "attention_numpy.py"
    path.write_text(REFERENCE.read_text() + FORKED_HELPER)
    result = np_grade(path)
    assert {q.status for q in result.questions.values()} == {"integrity"}, result.notes
    assert result.integrity_review["evidence"] == "hard"
    assert any("another process" in e for e in result.integrity_review["escapes"])


@pytest.mark.parametrize("route", sorted(LIBRARY_ROUTES))
def test_torch_library_implementations_are_refused_on_the_numpy_track(np_grade, tmp_path,
                                                                       route):
    """torch's reference and decomposition of softmax, reached from NumPy: forbidden calls."""
    path = tmp_path / "attention_numpy.py"
    path.write_text(REFERENCE.read_text().replace(
        "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
        "    return e / e.sum(axis=axis, keepdims=True)", LIBRARY_ROUTES[route]))
    q = np_grade(path, questions=["softmax"]).questions["softmax"]
    assert q.status == "forbidden call", question_feedback(q)
