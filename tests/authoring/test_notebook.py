"""The student notebook (generated from the template) and notebook submissions.

A notebook is graded exactly like the same code in a .py file: its cells run one by one in the
worker, so magics, shell escapes, `grader.check` calls and cells that fail cost nothing else.
"""
import ast
import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from helpers import (AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, ROOT, SUBMISSIONS, copy_assignment,
                     id_list, load_json, read_header, run_cli)

from autograder.platforms.build import build_student
from autograder.platforms.notebook.build import build_notebook, functions_of, notebook_path, notebook_text
from autograder.intake.submissions import python_lines, read_submission

TEMPLATE_NB = ROOT / "student_template" / "attention.ipynb"
SOLUTION = SUBMISSIONS / "correct" / "reference_style.py"


def _as_notebook(assignment, source: str, dest: Path, *, extra_cells=(), kernel=None) -> Path:
    """`source` laid out as the student notebook (via the generator), plus extra cells."""
    nb = build_notebook(assignment, source)
    for after, cell in extra_cells:
        at = [c.get("id") for c in nb.cells].index(after) + 1
        nb.cells.insert(at, cell)
    if kernel is not None:
        nb.metadata["kernelspec"] = kernel
        nb.metadata.pop("language_info", None)
    dest.write_text(nbformat.writes(nb))
    return dest


def _execute(path: Path, cwd: Path):
    nb = nbformat.read(str(path), as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def _check_outputs(nb) -> dict[str, str]:
    """{question: text shown by its grader.check cell}."""
    out = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("grader.check("):
            qid = cell.source.split('"')[1]
            out[qid] = "\n".join(o.get("data", {}).get("text/plain", "") or o.get("text", "")
                                 for o in cell.outputs)
    return out


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, assignment):
    return build_student(assignment, tmp_path_factory.mktemp("build"))


# ------------------------------------------------------------------ one source, no drift

def test_committed_notebook_is_what_the_generator_makes(assignment):
    assert notebook_path(assignment) == TEMPLATE_NB
    assert TEMPLATE_NB.read_text() == notebook_text(assignment), \
        "student_template/attention.ipynb is stale: run `python -m autograder.platforms.notebook attention`"


def test_notebook_md_explains_written_questions_above_their_prompts(tmp_path):
    """`<!-- question: ID -->` in notebook.md may name a written question as well as an
    autograded one; its text comes right above that question's prompt. An unknown id is
    refused, naming the ids there are."""
    from autograder.model.assignment import load_assignment

    adir = copy_assignment(tmp_path / "attention", "attention")
    prose = adir / "notebook.md"
    prose.write_text(prose.read_text().replace(
        "<!-- end -->", "<!-- question: why_scale -->\nThink of the lesson's two softmaxes.\n\n"
                        "<!-- end -->"))
    nb = build_notebook(load_assignment(adir))
    ids = [c.get("id") for c in nb.cells]
    about = ids.index("why_scale-about")
    assert ids[about + 1] == "why_scale-prompt"
    assert nb.cells[about].source == "Think of the lesson's two softmaxes."
    prose.write_text(prose.read_text().replace("question: why_scale", "question: why_scales"))
    with pytest.raises(ValueError, match="unknown questions: why_scales .*why_scale"):
        build_notebook(load_assignment(adir))


def test_notebook_holds_the_template_code_and_a_check_per_question(assignment):
    nb = nbformat.read(str(TEMPLATE_NB), as_version=4)
    nbformat.validate(nb)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert "import otter" in code[0] and "otter.Notebook(tests_dir=" in code[0]
    functions = functions_of(assignment.template.read_text())
    defined = {}
    for src in code:
        for node in ast.parse(src).body:
            if isinstance(node, ast.FunctionDef):
                defined[node.name] = src
    assert defined == functions           # every function, its source unchanged, nothing else
    checks = [src for src in code if src.startswith("grader.check(")]
    assert checks == [f'grader.check("{q}")' for q in QUESTIONS]
    # Each question's functions come right before its check, after its explanation.
    order = [c.source for c in nb.cells]
    for q in assignment.questions:
        at = order.index(f'grader.check("{q.id}")')
        assert [ast.parse(s).body[0].name for s in order[at - len(q.functions):at]] == q.functions
        assert nb.cells[at - len(q.functions) - 1].cell_type == "markdown"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "0.401" in text and "[0.09, 0.245, 0.665]" in text   # the lessons' numbers


# ------------------------------------------------------------------ running it in Jupyter

def test_template_notebook_checks_say_not_implemented(bundle):
    nb = _execute(bundle / "attention.ipynb", bundle)
    outputs = _check_outputs(nb)
    assert list(outputs) == QUESTIONS
    for qid, text in outputs.items():
        assert "Test case failed" in text, (qid, text)
        assert "is not implemented yet" in text, (qid, text)
        assert "All test cases passed" not in text
        # Only public cases ship: a check never mentions a hidden case.
        assert "hidden" not in text.lower(), (qid, text)


def test_filled_notebook_passes_every_check(bundle, assignment, tmp_path):
    path = _as_notebook(assignment, SOLUTION.read_text(), bundle / "filled.ipynb")
    try:
        nb = _execute(path, bundle)
    finally:
        path.unlink()
    outputs = _check_outputs(nb)
    assert list(outputs) == QUESTIONS
    for qid, text in outputs.items():
        assert "All test cases passed" in text, (qid, text)


def test_notebook_opened_alone_downloads_its_checks_from_bundle_url(built, tmp_path):
    """An assignment that publishes its bundle (`[student] bundle_url`): the notebook opened in
    an empty folder (as in Colab) downloads the zip in its first cell, unpacks it, and every
    check then runs. Offline: the URL is a file:// one of the bundle `autograder build` made."""
    import os

    from autograder.model.assignment import load_assignment
    from helpers import copy_assignment

    url = (built / "attention-student.zip").as_uri()
    published = load_assignment(str(copy_assignment(
        tmp_path / "course" / "attention", extra_toml=f'\n[student]\nbundle_url = "{url}"\n')))
    opened = tmp_path / "colab"
    opened.mkdir()
    path = _as_notebook(published, SOLUTION.read_text(), opened / "attention.ipynb")
    nb = nbformat.read(str(path), as_version=4)
    assert f"BUNDLE_URL = {url!r}" in nb.cells[[c.cell_type for c in nb.cells].index("code")].source
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # nothing of the project
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(opened)}}).execute(env=env)
    assert (opened / "attention-student.zip").read_bytes() == \
        (built / "attention-student.zip").read_bytes()
    assert (opened / "attention-student" / "autograder").is_dir()
    outputs = _check_outputs(nb)
    assert list(outputs) == QUESTIONS
    for qid, text in outputs.items():
        assert "All test cases passed" in text, (qid, text)


# ------------------------------------------------------------------ grading notebooks

def _messy_cells():
    """What real notebooks contain besides the functions: (after the cell with this id, cell)."""
    def c(cid, source):
        cell = nbformat.v4.new_code_cell(source)
        cell["id"] = cid
        return cell

    return [
        ("otter-setup", c("magics", "%matplotlib inline\n%load_ext autoreload\n"
                                    "!pip install --quiet einops\nfiles = !ls\nimport torch\n"
                                    "x = torch.randn(3)\nx?")),
        ("softmax-softmax", c("fails", "softmax(torch.tensor([1.0, 2.0]))\n"
                                       "raise RuntimeError('a cell that fails')\n"
                                       "this_line_never_runs = 1")),
        ("fails", c("bash", "%%bash\necho this cell is not Python\n  indented too")),
        ("bash", c("syntax", "def half_written(:\n    pass")),
        ("syntax", c("timed", "%%time\ny = 1 + 1")),
        ("timed", c("checks", "grader.check(\n    'softmax')\nresult = grader.check_all()")),
    ]


def _cell_number(path: Path, cid: str) -> int:
    nb = json.loads(path.read_text())
    return [c.get("id") for c in nb["cells"]].index(cid) + 1


def _scores(result):
    return {q: (r.score, r.status) for q, r in result.questions.items()}


def _corpus_sample():
    """Wrong submissions covering every question, and the correct ones."""
    wrong = sorted((SUBMISSIONS / "wrong").glob("*.py"))
    picked, covered = [], set()
    for f in wrong:
        loses = set(id_list(read_header(f)["loses"]))
        if loses - covered:
            picked.append(f)
            covered |= loses
    assert covered == set(QUESTIONS)
    # A self-test at the top level calls the file's own functions: laid out as the notebook
    # (every statement that is no question's function first) it would run before them.
    return picked + [p for p in sorted((SUBMISSIONS / "correct").glob("*.py"))
                     if p.name != "idiom_self_test_at_import.py"]


def test_py_and_ipynb_get_identical_scores(grade, assignment, tmp_path, corpus_results):
    for py in _corpus_sample():
        nb = _as_notebook(assignment, py.read_text(), tmp_path / f"{py.stem}.ipynb")
        as_py, as_nb = corpus_results[py.name], grade(nb)   # the .py as the suite graded it
        assert as_nb.error is None and as_nb.notes == []
        assert _scores(as_nb) == _scores(as_py), py.name
        assert as_nb.score == as_py.score


def test_magics_grader_calls_and_failing_cells_cost_nothing(grade, assignment, tmp_path):
    py = SUBMISSIONS / "wrong" / "attention_no_scaling.py"
    messy = _as_notebook(assignment, py.read_text(), tmp_path / "messy.ipynb",
                         extra_cells=_messy_cells())
    as_py, as_nb = grade(py), grade(messy)
    assert _scores(as_nb) == _scores(as_py)
    notes = "\n".join(as_nb.notes)
    fails, syntax = _cell_number(messy, "fails"), _cell_number(messy, "syntax")
    assert f"cell {fails} of messy.ipynb raised RuntimeError at line 2" in notes
    assert "a cell that fails" in notes
    assert f"cell {syntax} of messy.ipynb has a syntax error at line 1" in notes
    assert len(as_nb.notes) == 2, as_nb.notes   # magics, %%bash and grader calls are no errors
    # The student's own check reads notebooks the same way.
    local = _scores_public(assignment, messy)
    assert local == {q: r.status for q, r in grade(py, include_hidden=False).questions.items()}


def _scores_public(assignment, path):
    from autograder.grading.grade import check_in_process

    return {q: r.status for q, r in check_in_process(assignment, path).questions.items()}


def test_grade_cli_scores_py_and_ipynb_alike(assignment, tmp_path):
    py = SUBMISSIONS / "wrong" / "mha_ignores_context.py"
    nb = _as_notebook(assignment, py.read_text(), tmp_path / "mha_ignores_context.ipynb",
                      extra_cells=_messy_cells())
    out = tmp_path / "grades.json"
    r = run_cli("grade", "-a", "attention", str(py), str(nb), "--json", str(out))
    assert r.returncode == 0, r.stderr
    a, b = load_json(out)["submissions"]
    assert a["path"].endswith(".py") and b["path"].endswith(".ipynb")
    assert a["score"] == b["score"] < a["max_score"]
    assert {q: (v["score"], v["status"]) for q, v in a["questions"].items()} == \
        {q: (v["score"], v["status"]) for q, v in b["questions"].items()}


def test_non_python_kernel_and_invalid_json_get_a_row(grade, assignment, tmp_path):
    r_nb = _as_notebook(assignment, SOLUTION.read_text(), tmp_path / "r.ipynb",
                        kernel={"name": "ir", "display_name": "R", "language": "R"})
    result = grade(r_nb)
    assert result.score == 0 and list(result.questions) == QUESTIONS
    assert "kernel 'R' for R, not Python" in result.error
    julia = _as_notebook(assignment, SOLUTION.read_text(), tmp_path / "j.ipynb",
                         kernel={"name": "julia-1.10", "display_name": "Julia 1.10"})
    assert "does not run Python" in grade(julia).error
    bad = tmp_path / "bad.ipynb"
    bad.write_text(TEMPLATE_NB.read_text()[:-200])
    result = grade(bad)
    assert result.score == 0 and list(result.questions) == QUESTIONS
    assert "not valid JSON" in result.error
    not_nb = tmp_path / "list.ipynb"
    not_nb.write_text("[1, 2]")
    assert "not a Jupyter notebook" in grade(not_nb).error


def test_unknown_python_kernel_name_is_graded_with_a_note(grade, assignment, tmp_path):
    nb = _as_notebook(assignment, SOLUTION.read_text(), tmp_path / "custom.ipynb",
                      kernel={"name": "my-course-env", "display_name": "Course", "language":
                              "python"})
    result = grade(nb)
    # The written questions: unanswered.
    assert result.score == AUTOGRADED_MAX and result.max_score == MAX_SCORE
    nb2 = _as_notebook(assignment, SOLUTION.read_text(), tmp_path / "custom2.ipynb",
                       kernel={"name": "my-course-env", "display_name": "Course"})
    result = grade(nb2)
    assert result.score == AUTOGRADED_MAX
    assert any("'my-course-env'" in n and "graded as Python" in n for n in result.notes)


def test_notebook_cells_keep_line_numbers_and_drop_ipython_only_lines():
    src = ("import otter\ngrader = otter.Notebook(tests_dir='t')\n%matplotlib inline\n"
           "def f(x):\n    %time y = x + 1\n    return y\nout = !ls\nf?\n"
           "grader.check(\n    'f')\nz = 1 if 2 != 3 else 0\n%time w = f(1)")
    out = python_lines(src)
    assert len(out.splitlines()) == len(src.splitlines())
    ns = {}
    exec(compile(out, "cell", "exec"), ns)
    assert ns["f"](1) == 2 and ns["z"] == 1 and ns["w"] == 2
    assert "grader" not in ns and "out" not in ns
    assert python_lines("%%writefile helper.py\nimport os\n  x").startswith("# %%writefile")


def test_nbformat3_and_list_sources_are_read(tmp_path):
    v3 = {"nbformat": 3, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": ["def softmax(x, dim=-1):\n", "    return x\n"]}]}]}
    p = tmp_path / "old.ipynb"
    p.write_text(json.dumps(v3))
    sub = read_submission(p)
    assert [c.number for c in sub.cells] == [1] and "def softmax" in sub.cells[0].source


def test_student_check_reads_a_notebook(bundle, tmp_path):
    """`autograder check attention.ipynb` in the student bundle: not attempted everywhere."""
    shutil.copy(bundle / "attention.ipynb", tmp_path / "attention.ipynb")
    r = run_cli("check", str(tmp_path / "attention.ipynb"), cwd=bundle,
                env={"PYTHONPATH": str(bundle)})
    assert r.returncode == 1, r.stderr
    assert r.stdout.count("not attempted") == len(QUESTIONS)
