"""Forbidden routines an assignment declares itself: as strong as the shipped ones, whatever the
route, and always reported as a refusal (never as an error of the student's code).

Two small assignments are written into a throwaway course, as an instructor would, with no
change to the engine: a torch one whose question forbids `torch.nn.functional.linear` (the
functional name, the module, `torch.ops.aten.linear`, the C entry point, a name built at run
time), and a NumPy one whose question forbids the ufunc `numpy.logaddexp` (called, and through
`.reduce` and `.accumulate`, under every name NumPy gives it). Each route is graded in the
sandbox and checked in the student's own process: the same refusal, in the same words; the
honest version keeps full marks.
"""
import re
import textwrap
from pathlib import Path

import pytest

from helpers import load_json, run_cli

AFFINE_TOML = '''
name = "affine"
student_file = "affine.py"
template = "student_template/affine.py"
reference = "reference/affine.py"

[[question]]
id = "affine"
functions = ["affine"]
# Declared here, not in the question file: every route to the operator is refused.
forbidden = ["torch.nn.functional.linear"]
'''
AFFINE_TEMPLATE = '''
import torch


def affine(x, w, b):
    """x @ w.T + b, as torch.nn.functional.linear computes it (which you may not call)."""
    raise NotImplementedError("affine")
'''
AFFINE_REFERENCE = '''
import torch


def affine(x, w, b):
    return x @ w.transpose(-2, -1) + b
'''
AFFINE_QUESTION = '''
from otter.test_files import test_case

from autograder.cases import Question, randn, snapshot

OK_FORMAT = False
name = "affine"
points = 2
q = Question(name)


@test_case(name="a small batch", points=1, hidden=False)
def small(affine):
    q.check("affine", affine, randn(2, 3, seed=1), randn(4, 3, seed=2), randn(4, seed=3),
            expected=snapshot("small"))


@test_case(name="batched, float64", points=1, hidden=True)
def batched(affine):
    q.check("affine", affine, randn(2, 3, 5, seed=4, dtype="float64"),
            randn(4, 5, seed=5, dtype="float64"), randn(4, seed=6, dtype="float64"), seed=1)
'''
AFFINE_ROUTES = {
    "honest": "return x @ w.transpose(-2, -1) + b",
    "functional": "return torch.nn.functional.linear(x, w, b)",
    "module": ("layer = torch.nn.Linear(w.shape[1], w.shape[0], dtype=x.dtype)\n"
               "    return torch.func.functional_call(layer, {'weight': w, 'bias': b}, (x,))"),
    "aten": "return torch.ops.aten.linear(x, w, b)",
    "c_entry_point": "return torch._C._nn.linear(x, w, b)",
    "built_name": "return getattr(torch.nn.functional, 'lin' + 'ear')(x, w, b)",
}

LSE_TOML = '''
name = "lse"
student_file = "lse.py"
template = "student_template/lse.py"
reference = "reference/lse.py"

# A routine of this assignment's own: NumPy's ufunc, by any name.
[routines.logaddexp]
names = ["numpy.logaddexp"]

[[question]]
id = "lse"
functions = ["logsumexp"]
forbidden = ["logaddexp"]
'''
LSE_TEMPLATE = '''
import numpy as np


def logsumexp(a, axis=-1):
    """log(sum(exp(a))) along `axis`, without overflow (np.logaddexp is not allowed)."""
    raise NotImplementedError("logsumexp")
'''
LSE_REFERENCE = '''
import numpy as np


def logsumexp(a, axis=-1):
    m = np.max(a, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))
'''
LSE_QUESTION = '''
from otter.test_files import test_case

from autograder.cases import Question, array, randn, snapshot, to_numpy

OK_FORMAT = False
name = "lse"
points = 2
q = Question(name)


@test_case(name="large values", points=1, hidden=False)
def large(logsumexp):
    q.check("logsumexp", logsumexp, array([[1000.0, 1001.0, 1002.0], [1.0, 2.0, 3.0]],
                                          "float64"), expected=snapshot("large"))


@test_case(name="along axis 0", points=1, hidden=True)
def columns(logsumexp):
    q.check("logsumexp", logsumexp, to_numpy(randn(4, 3, seed=1, dtype="float64")), axis=0,
            seed=1)
'''
LSE_ROUTES = {
    "honest": ("m = np.max(a, axis=axis, keepdims=True)\n"
               "    return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))"),
    "called": ("out = np.moveaxis(a, axis, -1)\n"
               "    acc = out[..., 0]\n"
               "    for i in range(1, out.shape[-1]):\n"
               "        acc = np.logaddexp(acc, out[..., i])\n"
               "    return acc"),
    "reduce": "return np.logaddexp.reduce(a, axis=axis)",
    "accumulate": "return np.take(np.logaddexp.accumulate(a, axis=axis), -1, axis=axis)",
    "bound_at_import": "return _lae.reduce(a, axis=axis)",
    "numpy_core_home": "return _core_umath.logaddexp.reduce(a, axis=axis)",
}
LSE_PRELUDE = '''
import numpy as np
from numpy import logaddexp as _lae
try:
    from numpy._core import umath as _core_umath
except ImportError:
    from numpy.core import umath as _core_umath
'''


def _course(root: Path, name: str, toml: str, template: str, reference: str,
            question: str) -> Path:
    folder = root / "assignments" / name
    (folder / "tests").mkdir(parents=True)
    (folder / "assignment.toml").write_text(textwrap.dedent(toml).lstrip())
    (folder / "tests" / f"{name}.py").write_text(textwrap.dedent(question).lstrip())
    for part, text in (("student_template", template), ("reference", reference)):
        (root / part).mkdir(exist_ok=True)
        (root / part / f"{name}.py").write_text(textwrap.dedent(text).lstrip())
    r = run_cli("snapshot", "-a", str(folder))
    assert r.returncode == 0, r.stdout + r.stderr
    return folder


def _submissions(folder: Path, prelude: str, signature: str, routes: dict) -> Path:
    subs = folder.parent.parent / f"{folder.name}-class"
    subs.mkdir()
    for route, body in routes.items():
        (subs / f"{route}.py").write_text(f"{prelude}\n\n{signature}\n    {body}\n")
    return subs


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Both assignments, every route, graded in the sandbox as an instructor would."""
    root = tmp_path_factory.mktemp("course")
    out = {}
    for name, files, prelude, signature, routes in (
            ("affine", (AFFINE_TOML, AFFINE_TEMPLATE, AFFINE_REFERENCE, AFFINE_QUESTION),
             "import torch", "def affine(x, w, b):", AFFINE_ROUTES),
            ("lse", (LSE_TOML, LSE_TEMPLATE, LSE_REFERENCE, LSE_QUESTION), LSE_PRELUDE,
             "def logsumexp(a, axis=-1):", LSE_ROUTES)):
        folder = _course(root, name, *files)
        subs = _submissions(folder, prelude, signature, routes)
        json_out = root / f"{name}.json"
        r = run_cli("grade", "-a", str(folder), str(subs), "--json", str(json_out),
                    timeout=900)
        assert r.returncode in (0, 4), r.stdout + r.stderr
        rows = {Path(s["path"]).stem: s for s in load_json(json_out)["submissions"]}
        out[name] = (folder, subs, rows)
    return out


@pytest.mark.parametrize("name, route", [("affine", r) for r in AFFINE_ROUTES] +
                         [("lse", r) for r in LSE_ROUTES])
def test_every_route_to_a_declared_routine_is_a_refusal(graded, name, route):
    folder, subs, rows = graded[name]
    q = rows[route]["questions"][name]
    if route == "honest":
        assert q["score"] == q["max_score"] == 2, q["feedback"]
        assert "integrity" not in rows[route], rows[route].get("integrity")
        return
    assert q["status"] == "forbidden call" and q["score"] == 0, (route, q["feedback"])
    assert "error" not in q["feedback"].lower() and "AttributeError" not in q["feedback"]
    shown = "torch.nn.functional.linear" if name == "affine" else "numpy.logaddexp"
    assert f"`{shown}`" in q["feedback"], q["feedback"]


@pytest.mark.parametrize("name, route", [("affine", "aten"), ("affine", "module"),
                                         ("lse", "reduce"), ("lse", "numpy_core_home")])
def test_check_refuses_the_same_routes_in_the_same_words(graded, name, route):
    folder, subs, rows = graded[name]
    r = run_cli("check", str(subs / f"{route}.py"), "-a", str(folder))
    assert r.returncode == 1 and "(forbidden call)" in r.stdout, r.stdout + r.stderr
    graded_words = re.sub(r" \(your source: [^)]*\)", "",
                          rows[route]["questions"][name]["feedback"])
    first = graded_words.split("\n")[0].split(": ", 1)[1]
    assert first in r.stdout, (first, r.stdout)


def test_lint_shows_what_each_declared_routine_refuses(graded):
    folder, _, _ = graded["affine"]
    r = run_cli("lint", "-a", str(folder), "--no-reference")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "affine: forbids `torch.nn.functional.linear`" in r.stdout
    assert "refused at torch's dispatcher: 1 operators (linear)" in r.stdout
    folder, _, _ = graded["lse"]
    r = run_cli("lint", "-a", str(folder), "--no-reference")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "refused where the function is: `numpy.logaddexp`" in r.stdout
