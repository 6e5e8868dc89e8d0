"""Forbidden routines refused where every route meets, and the worker's checks out of reach.

* In the student's own process (`autograder check`): every route to a forbidden routine is
  refused and named, honest code (from scratch, or the library where the question allows it)
  runs untouched.
* In the sandbox: the new hostile routes get their exact outcomes (forbidden call on the one
  question, or "integrity" for an escape), honest idioms keep full marks without a flag, and the
  probe that walks everything reachable without an audited call finds nothing of the engine,
  while the same probe does find an engine module deliberately left in `sys.modules`.
* The audit hook, in a process of its own: each escape ends the process with its status,
  each honest idiom passes.
"""
import functools
import json
import operator
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from helpers import AUTOGRADED_MAX, MAX_SCORE, QUESTIONS, SUBMISSIONS
from autograder.feedback.contract import submission_json

HOSTILE = SUBMISSIONS / "hostile"
SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax",
           "torch.special.softmax", "autograd.SoftmaxBackward0"]
ATTENTION = ["torch.nn.functional.scaled_dot_product_attention",
             "torch.nn.functional.multi_head_attention_forward"]
LAYER_NORM = ["torch.nn.functional.layer_norm", "torch.layer_norm"]


def _table():
    from autograder.model.assignment import load_assignment
    from autograder.sandbox.routines import table_for

    return table_for(load_assignment("attention").routines)


def _run(func, forbidden, *args, grad=True, table=None):
    """`func` called as a question forbidding `forbidden` calls it, in this process, with what
    the attention assignment's table says computes each routine."""
    from autograder.sandbox.execute import run_call

    table = table if table is not None else _table()
    upstream = None
    if grad:
        out = func(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args])
        upstream = torch.ones_like(out)
    return run_call(func, args, {}, upstream=upstream, want_grad=grad, forbidden=forbidden,
                    plans=[table.plan(n) for n in forbidden])


NAME = "".join(["_", "soft", "max"])      # built at run time, as a student would
X = torch.randn(2, 3, 4, dtype=torch.float64)
ROUTES = {
    "vars(torch)[key]": (SOFTMAX, lambda x: vars(torch)[NAME](x, -1, False)),
    "reduce(getattr)": (SOFTMAX, lambda x: functools.reduce(getattr, (NAME,), torch)(x, -1, False)),
    "attrgetter": (SOFTMAX, lambda x: operator.attrgetter("special.softmax")(torch)(x, -1)),
    "out= overload": (SOFTMAX, lambda x: torch.ops.aten._softmax.out(
        x.detach(), -1, False, out=torch.empty_like(x.detach())) + 0 * x),
    "log_softmax().exp()": (SOFTMAX, lambda x: torch.log_softmax(x, -1).exp()),
    "attention kernel": (SOFTMAX, lambda x: torch.nn.functional.scaled_dot_product_attention(
        x[None], x[None], x[None])[0]),
    "nested tensor": (SOFTMAX, lambda x: torch.nested.nested_tensor([x.detach()[0]]).softmax(-1)
                      .to_padded_tensor(0.0)[0] + 0 * x[0]),
    "sdpa 3-d (math path)": (ATTENTION, lambda x: torch.nn.functional.scaled_dot_product_attention(
        x, x, x)),
    "sdpa 4-d (fused kernel)": (ATTENTION, lambda x:
                                torch.nn.functional.scaled_dot_product_attention(
                                    x[None], x[None], x[None])[0]),
    "MultiheadAttention, need_weights": (ATTENTION, lambda x: torch.nn.MultiheadAttention(
        4, 2, batch_first=True, dtype=torch.float64)(x, x, x)[0]),
    "native_layer_norm": (LAYER_NORM, lambda x: torch.native_layer_norm(x, (4,), None, None,
                                                                        1e-5)[0]),
    "group norm": (LAYER_NORM, lambda x: torch.nn.functional.group_norm(
        x.reshape(-1, 1, 4), 1).reshape(x.shape)),
    "instance norm": (LAYER_NORM, lambda x: torch.nn.functional.instance_norm(
        x.reshape(-1, 1, 4)).reshape(x.shape)),
    "batch norm, transposed": (LAYER_NORM, lambda x: torch.nn.functional.batch_norm(
        x.reshape(-1, 4).T, None, None, training=True).T.reshape(x.shape)),
}


class _Hidden(torch.autograd.Function):
    """A library softmax in forward, a hand-written backward: no library node in the graph."""

    @staticmethod
    def forward(ctx, x):
        y = torch.softmax(x, -1)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(-1, keepdim=True))


class _BackwardOnly(torch.autograd.Function):
    """A softmax by hand, its backward by the library's private kernel."""

    @staticmethod
    def forward(ctx, x):
        e = torch.exp(x - x.amax(-1, keepdim=True))
        y = e / e.sum(-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return torch._softmax_backward_data(g, y, -1, y.dtype)


ROUTES["inside a custom autograd.Function"] = (SOFTMAX, _Hidden.apply)
ROUTES["only in the backward pass"] = (SOFTMAX, _BackwardOnly.apply)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_every_route_to_a_forbidden_routine_is_refused_and_named(route):
    forbidden, func = ROUTES[route]
    outcome = _run(func, forbidden, X.clone())
    assert outcome["forbidden"] and set(outcome["forbidden"]) <= set(forbidden), \
        (route, outcome["status"], outcome["error"])


HONEST = {
    "from scratch": lambda x: (lambda e: e / e.sum(-1, keepdim=True))(
        torch.exp(x - x.amax(-1, keepdim=True))),
    "logsumexp": lambda x: torch.exp(x - torch.logsumexp(x, -1, keepdim=True)),
    "where / masked_fill / einsum / relu": lambda x: torch.nn.functional.relu(torch.einsum(
        "...ij,...kj->...ik", torch.where(x > 0, x, x * 2), x).masked_fill(
        torch.zeros(3, 3, dtype=torch.bool), -1e9)),
    "layer norm by hand": lambda x: (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, keepdim=True, unbiased=False) + 1e-5),
}


@pytest.mark.parametrize("name", sorted(HONEST))
@pytest.mark.parametrize("forbidden", [SOFTMAX, ATTENTION, LAYER_NORM], ids=["softmax",
                                                                                "attention", "ln"])
def test_honest_code_is_never_refused(name, forbidden):
    outcome = _run(HONEST[name], forbidden, X.clone())
    assert outcome["status"] == "ok" and outcome["forbidden"] == [], outcome["error"]
    assert outcome["grads"] and all(g is not None for g in outcome["grads"].values())


def test_the_library_is_allowed_where_the_question_allows_it_and_restored_after():
    """Attention may call torch.softmax; after a call that forbade it, torch works as before."""
    before = torch.softmax(X, -1)
    outcome = _run(lambda x: torch.softmax(x, -1), ATTENTION, X.clone())
    assert outcome["status"] == "ok" and outcome["forbidden"] == []
    assert _run(lambda x: torch.softmax(x, -1), SOFTMAX, X.clone())["forbidden"]
    assert torch.equal(torch.softmax(X, -1), before)
    assert torch.nn.functional.layer_norm(X, (4,)).shape == X.shape


def test_a_python_level_library_function_is_refused_through_every_alias():
    """The NumPy track's scipy.special.softmax: module attribute, alias bound before, an entry
    of a container, the defining module: all are the same function object, all refused."""
    import numpy as np
    import scipy.special
    from scipy.special import softmax as bound_before

    holder = [scipy.special.softmax]
    home = sys.modules[scipy.special.softmax.__module__]
    routes = [lambda a: scipy.special.softmax(a), lambda a: bound_before(a),
              lambda a: holder[0](a), lambda a: vars(home)["softmax"](a)]
    a = np.array([1.0, 2.0, 3.0])
    for route in routes:
        outcome = _run(route, ["scipy.special.softmax"], a, grad=False)
        assert outcome["forbidden"] == ["scipy.special.softmax"]
    # Allowed again once the call is over.
    assert np.allclose(scipy.special.softmax(a).sum(), 1.0)


@pytest.mark.parametrize("assignment", ["attention", "attention_numpy"])
def test_lint_knows_every_operator_of_the_shipped_tables(assignment):
    from autograder.model.assignment import load_assignment
    from autograder.sandbox.forbidden_ops import missing_ops

    from autograder.sandbox.routines import table_for

    routines = load_assignment(assignment).routines
    ops = {o for r in routines.routines.values() for o in r.aten} | {
        o for r in routines.routines.values() for g in r.signature for o in g}
    assert len(ops) > 30 and missing_ops(ops) == []
    assert "_softmax" in table_for(routines).plan("torch.softmax").ops


def test_an_older_torch_missing_newer_operators_is_no_authoring_mistake():
    """`check` runs lint: a student's torch 2.4 lacks `_safe_softmax` (added later), which no
    route can reach there, so it must not stop their check; on a torch as new as the one the
    project pins a missing operator is still reported."""
    from autograder.sandbox import forbidden_ops

    ops = [*_table().plan("torch.softmax").ops, "_no_such_operator"]
    assert forbidden_ops.missing_ops(ops, installed=(2, 4)) == []
    assert forbidden_ops.missing_ops(ops, installed=(2, 13)) == ["_no_such_operator"]
    assert forbidden_ops.missing_ops(ops) == ["_no_such_operator"]   # 2.13 here


# ------------------------------------------------------------------ the audit hook

# One process imports torch once and forks a fresh child per case, as the grader's fork server
# does: the child installs the hook, runs its case and exits; the parent reports each child's
# exit status and whether it got past its case ("RAN"), one JSON line per case.
HOOK_SCRIPT = r"""
import json, os, sys, torch, collections, enum, inspect, logging, traceback, typing, gc, pickle
from autograder.sandbox import audit, guard
def caught():
    try:
        1 / 0
    except ZeroDivisionError:
        return traceback.format_exc()
honest = {
    "format_exc": caught,
    "namedtuple": lambda: collections.namedtuple("P", "a b"),
    "NamedTuple": lambda: typing.NamedTuple("N", [("a", int)]),
    "Enum": lambda: enum.Enum("C", "R G"),
    "logging": lambda: logging.getLogger("x").warning("w"),
    "signature": lambda: inspect.signature(caught),
    "gc.collect": gc.collect,
    "read /proc/cpuinfo": lambda: open("/proc/cpuinfo").read(1),
    "arm the refusals": lambda: __import__("resource").setrlimit(
        __import__("resource").RLIMIT_RTTIME, (0, 0)),
    "another resource limit": lambda: __import__("resource").setrlimit(
        __import__("resource").RLIMIT_CORE, (0, 0)),
}
def tb_frame():
    try:
        1 / 0
    except ZeroDivisionError as e:
        return e.__traceback__.tb_frame
escapes = {
    "sys._getframe": (sys._getframe, 0),
    "inspect.stack": (inspect.stack, 0),
    "tb_frame": (tb_frame, 0),
    "gi_frame": (lambda: (lambda: (yield))().gi_frame, 0),
    "gc.get_objects": (gc.get_objects, 1),
    "gc.get_referrers": (lambda: gc.get_referrers(sys), 1),
    "ctypes": (lambda: __import__("ctypes").string_at(id(1), 8), 2),
    "code.replace": (lambda: caught.__code__.replace(co_name="x"), 3),
    "FunctionType": (lambda: type(caught)(caught.__code__, {}), 3),
    "compile as a library file": (lambda: compile("1", os.__file__, "eval"), 3),
    "marshal": (lambda: __import__("marshal").loads(__import__("marshal").dumps(1)), 4),
    "pickle find_class": (lambda: pickle.loads(pickle.dumps(os.getcwd)), 5),
    "settrace": (lambda: sys.settrace(None), 6),
    "/proc/self/maps": (lambda: open("/proc/self/maps"), 7),
    "addaudithook": (lambda: sys.addaudithook(lambda *a: None), 8),
    "set __code__": (lambda: setattr(caught, "__code__", tb_frame.__code__), 10),
    "raise the arming limit": (lambda: __import__("resource").setrlimit(
        __import__("resource").RLIMIT_RTTIME, (5, 5)), 13),
}
def run(case):
    audit.install(lambda code: os._exit(code), trusted=guard.own_code())
    (honest[case] if case in honest else escapes[case][0])()
    os.write(1, b"RAN\n")
for case in sys.argv[1:]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.dup2(write, 1)
        try:
            run(case)
            code = 0
        except BaseException:
            traceback.print_exc()
            code = 99
        os._exit(code)
    os.close(write)
    out = b""
    while chunk := os.read(read, 65536):
        out += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"case": case, "code": os.waitstatus_to_exitcode(status),
                      "ran": b"RAN" in out}), flush=True)
"""
HOOK_HONEST = ["format_exc", "namedtuple", "NamedTuple", "Enum", "logging", "signature",
               "gc.collect", "read /proc/cpuinfo", "arm the refusals", "another resource limit"]
HOOK_ESCAPES = {"sys._getframe": 0, "inspect.stack": 0, "tb_frame": 0, "gi_frame": 0,
                "gc.get_objects": 1, "gc.get_referrers": 1, "ctypes": 2, "code.replace": 3,
                "FunctionType": 3, "compile as a library file": 3, "marshal": 4,
                "pickle find_class": 5, "settrace": 6, "/proc/self/maps": 7, "addaudithook": 8,
                "set __code__": 10, "raise the arming limit": 13}


@pytest.fixture(scope="module")
def hooked() -> dict[str, dict]:
    """{case: {"code": exit status, "ran": got past its case}} for every case, each run in a
    child of its own with the hook installed."""
    root = Path(__file__).resolve().parents[2]
    cases = HOOK_HONEST + sorted(HOOK_ESCAPES)
    r = subprocess.run([sys.executable, "-c", HOOK_SCRIPT, *cases], capture_output=True,
                       text=True, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {row.pop("case"): row for row in map(json.loads, r.stdout.splitlines())}
    assert sorted(rows) == sorted(cases), r.stderr[-3000:]
    return rows


@pytest.mark.parametrize("case", HOOK_HONEST)
def test_the_audit_hook_lets_honest_idioms_run(case, hooked):
    assert hooked[case] == {"code": 0, "ran": True}, hooked[case]


@pytest.mark.parametrize("case", sorted(HOOK_ESCAPES))
def test_the_audit_hook_refuses_each_escape_with_its_status(case, hooked):
    from autograder.sandbox.evidence import ESCAPE_EXIT

    assert hooked[case] == {"code": ESCAPE_EXIT + HOOK_ESCAPES[case], "ran": False}, \
        hooked[case]


# ------------------------------------------------------------------ in the sandbox

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """This round's hostile routes, escapes and the probe, graded in one batch with the honest
    idioms, as an instructor would."""
    import test_hostile

    folder = tmp_path_factory.mktemp("class")
    names = [n for n in test_hostile.EXPECTED if n.startswith(("route_", "escape_",
                                                               "reachability"))]
    for name in names:
        shutil.copy(HOSTILE / name, folder / name)
    for name in ("idiom_runtime_helpers.py", "reference_style.py"):
        shutil.copy(SUBMISSIONS / "correct" / name, folder / f"zz_{name}")
    out = folder.parent / "results.json"
    from helpers import run_cli

    r = run_cli("grade", "-a", "attention", str(folder), "--json", str(out), timeout=900)
    # Every row graded; the attacks' rows need the instructor (status 4, the honest ones not).
    assert r.returncode == 4, r.stderr[-3000:]
    assert "zz_" not in r.stderr.rsplit("need you:", 1)[-1]
    rows = {os.path.basename(s["path"]): s for s in json.loads(out.read_text())["submissions"]}
    return test_hostile, names, rows


def test_each_route_and_escape_gets_its_exact_outcome(graded):
    test_hostile, names, rows = graded
    for name in names:
        row = rows[name]
        for qid, want in test_hostile.EXPECTED[name].items():
            q = row["questions"][qid]
            assert q["score"] == (q["max_score"] if want == "full" else want), \
                (name, qid, q["feedback"])
            if (name, qid) in test_hostile.STATUS:
                assert q["status"] == test_hostile.STATUS[(name, qid)], (name, qid)
        test_hostile.check_flag(name, row)


def test_forbidden_feedback_names_the_routine_in_the_assignments_words(graded):
    _, _, rows = graded
    feedback = rows["route_torch_dict_private_softmax.py"]["questions"]["softmax"]["feedback"]
    assert "softmax called `torch.softmax`" in feedback
    assert "aten" not in feedback and "exit" not in feedback
    escape = rows["escape_proc_self_mem.py"]["questions"]["block"]["feedback"]
    assert "integrity: the grader refused opening the process's own /proc files" in escape


def test_honest_idioms_keep_full_marks_and_no_flag(graded):
    _, _, rows = graded
    for name in ("zz_idiom_runtime_helpers.py", "zz_reference_style.py"):
        row = rows[name]
        assert row["score"] == AUTOGRADED_MAX, (name, row.get("notes"))
        assert row["max_score"] == MAX_SCORE, (name, row.get("notes"))
        assert "integrity" not in row, row.get("integrity")


PROBE_SCRIPT = r"""
import json, sys
from pathlib import Path
from autograder.grading import integrity
from autograder.model.assignment import load_assignment
from autograder.feedback.contract import submission_json
from autograder.grading.grade import grade_submission
from autograder.sandbox import Sandbox
from autograder.static_scan import ScanResult

# The run-time evidence alone: the source scan's doubts (the probe names the mode stacks) would
# hide the probe's own report.
integrity.tamper_policy = lambda a: "flag"
ScanResult.forbidden = lambda self, *args: []
sandbox = Sandbox("auto")
try:
    row = submission_json(grade_submission(load_assignment("attention"), Path(sys.argv[1]),
                                           sandbox))
finally:
    sandbox.close()
print(json.dumps(row["questions"]["softmax"]))
"""
ROOT = Path(__file__).resolve().parents[2]


def _probe(root: Path = ROOT) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE_SCRIPT, str(HOSTILE / "reachability_probe.py")],
                       capture_output=True, text=True, cwd=root, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_probe_finds_no_engine_object_in_the_worker():
    softmax = _probe()
    assert softmax["status"] == "passed", softmax["feedback"]


def test_the_probe_finds_an_engine_module_left_in_sys_modules(tmp_path):
    """The same probe fails when the defence is broken on purpose (a copy of the engine whose
    worker leaves one module in sys.modules): the test above can fail."""
    for part in ("autograder", "assignments", "reference", "student_template"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "snapshots-*"))
    worker = tmp_path / "autograder" / "sandbox" / "worker.py"
    text = worker.read_text()
    broken = text.replace("    for name in _engine_modules():\n        del sys.modules[name]",
                          "    for name in _engine_modules():\n"
                          "        if name != 'autograder.sandbox.execute':\n"
                          "            del sys.modules[name]")
    assert broken != text
    worker.write_text(broken)
    softmax = _probe(tmp_path)
    assert "REACHABLE" in softmax["feedback"] and "autograder.sandbox.execute" in \
        softmax["feedback"], softmax["feedback"]


def test_the_probe_finds_a_registration_handle_left_reachable(tmp_path):
    """The probe's second walk (`__subclasses__`, frames library code hands back) fails when the
    defence is broken on purpose: a copy of the engine whose worker keeps its registration's
    handle in a module global. The probe reaches it, resets it, and names the refusal it
    removed; the real engine keeps no such handle (the test above). The break covers both ways
    a worker comes by its registrations: its own, and those the fork server made ahead."""
    for part in ("autograder", "assignments", "reference", "student_template"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "snapshots-*"))
    guard = tmp_path / "autograder" / "sandbox" / "guard.py"
    text = guard.read_text()
    broken = text.replace(
        "            ctypes.pythonapi.Py_IncRef(ctypes.py_object(libraries.pop()))\n",
        "            KEPT.append(libraries.pop())\n", 1)
    assert broken != text
    guard.write_text(broken + "\nKEPT: list = []\n")
    softmax = _probe(tmp_path)
    assert "REACHABLE" in softmax["feedback"] and "LEVER" in softmax["feedback"], \
        softmax["feedback"]


def test_lint_refuses_a_forbidden_routine_the_dispatcher_cannot_map(tmp_path):
    from autograder.authoring.lint import _check_question_file

    source = 'name = "softmax"\nq = Question(name, forbidden=["torch.softmx", "torch.softmax"])\n'
    errors = _check_question_file("softmax", tmp_path / "softmax.py", source)
    assert [e.line for e in errors] == [2] and "`torch.softmx`" in errors[0].message


def test_lint_lists_the_library_implementations_refused_with_each_routine():
    """`autograder lint` shows an author, per question, the operators and the installed Python
    implementations (torch's references and decomposition tables, SciPy's softmax) that the
    grading worker refuses with its forbidden routines."""
    from helpers import run_cli

    r = run_cli("lint", "-a", "attention", "--no-reference")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("softmax: forbids"))
    softmax = "\n".join(lines[start + 1:start + 5])
    for name in ("torch._refs.softmax", "torch._decomp.decompositions._softmax",
                 "torch._refs.special.log_softmax", "`scipy.special.softmax`", "(exp) + (sum"):
        assert name in softmax, softmax
    block = next(i for i, l in enumerate(lines) if l.startswith("block: forbids"))
    assert "torch._refs.nn.functional.layer_norm" in lines[block + 2]
    assert "`scipy.stats.zscore`" in "\n".join(lines[block:block + 5])
    assert "split_heads:" not in r.stdout      # forbids nothing


def test_every_installed_implementation_is_refused_in_the_worker():
    """What lint lists is what `guard.install` swaps: each implementation ends the process."""
    code = r"""
import os, sys
from autograder.model.assignment import load_assignment
from autograder.sandbox import guard
from autograder.sandbox.library_routines import implementations
from autograder.sandbox.routines import table_for
plan = table_for(load_assignment("attention").routines).plan("torch.softmax")
found = implementations(plan.ops)
from autograder.sandbox import armed
assert guard.install(["torch.softmax"], [plan], lambda code: os._exit(code),
                     lambda kind, i: 100 + i)[0] is None
assert armed.arm()
for name, f in found.items():
    pid = os.fork()
    if pid == 0:
        try:
            f()
        finally:
            os._exit(1)
    print(name, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())
    assert len(rows) >= 10 and "torch._refs.softmax" in rows, rows
    assert set(rows.values()) == {"100"}, rows


# ------------------------------------------------------------------ workers and their refusals

HONEST_BODY = (SUBMISSIONS / "correct" / "reference_style.py").read_text()


def _grade_one(tmp_path, source: str) -> dict:
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import grade_submission
    from autograder.sandbox import Sandbox

    path = tmp_path / "attention.py"
    path.write_text(source)
    sandbox = Sandbox("auto")
    try:
        return submission_json(grade_submission(load_assignment("attention"), path, sandbox))
    finally:
        sandbox.close()


def test_a_routine_refused_ahead_of_need_runs_where_its_question_allows_it(tmp_path):
    """A worker refuses the routines of its question and of the later ones; where a later
    question allows what an earlier one forbids (block allows the library attention that
    attention, mask and multi_head forbid), the call runs again in a worker that does not
    refuse it: each question gets exactly what it forbids."""
    source = HONEST_BODY.replace(
        "def scaled_dot_product_attention(q, k, v, mask=None):\n",
        "def scaled_dot_product_attention(q, k, v, mask=None):\n"
        "    if mask is None:\n"
        "        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)\n"
        "        return out, softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))\n")
    qs = _grade_one(tmp_path, source)["questions"]
    assert qs["attention"]["status"] == "forbidden call", qs["attention"]["feedback"]
    assert qs["multi_head"]["status"] == "forbidden call", qs["multi_head"]["feedback"]
    for qid in ("softmax", "split_heads", "block"):
        assert qs[qid]["status"] == "passed", (qid, qs[qid]["feedback"])


SELF_TEST = """

# A self-test at the top level (no __main__ guard): the library runs only while importing.
_x = torch.randn(2, 5)
assert torch.allclose(softmax(_x), torch.softmax(_x, -1))
assert torch.allclose(layer_norm(_x, torch.ones(5), torch.zeros(5)),
                      torch.nn.functional.layer_norm(_x, (5,)), atol=1e-6)
"""


def test_a_library_routine_called_only_at_the_top_level_costs_nothing(tmp_path):
    """The refusals hold once the import is over (`armed.py`): a self-test at the top level of
    the file that compares with torch.softmax and F.layer_norm costs nothing, in `grade` as in
    `check`; the same routine called by a graded function is still refused, in both."""
    from autograder.model.assignment import load_assignment
    from autograder.grading.grade import check_in_process

    source = HONEST_BODY + SELF_TEST
    qs = _grade_one(tmp_path, source)["questions"]
    for qid in QUESTIONS:
        assert qs[qid]["status"] == "passed", (qid, qs[qid]["feedback"])
    path = tmp_path / "checked" / "attention.py"
    path.parent.mkdir()
    path.write_text(source)
    checked = check_in_process(load_assignment("attention"), path).questions
    assert all(checked[q].status == "passed" for q in QUESTIONS), checked
    used = source.replace("def softmax(x, dim=-1):\n",
                          "def softmax(x, dim=-1):\n    return torch.softmax(x, dim)\n")
    assert used != source
    (tmp_path / "used").mkdir()
    qs = _grade_one(tmp_path / "used", used)["questions"]
    assert qs["softmax"]["status"] == "forbidden call" and qs["softmax"]["score"] == 0
    assert qs["block"]["status"] == "passed", qs["block"]["feedback"]
    path.write_text(used)
    checked = check_in_process(load_assignment("attention"), path).questions
    assert checked["softmax"].status == "forbidden call"
    # The same words (grade adds where the source shows the route, from its scan).
    import re

    words = checked["softmax"].cases[0].message.split("\n")[0]
    graded = re.sub(r" \(your source: [^)]*\)", "", qs["softmax"]["feedback"])
    assert words in graded, (words, graded)


UNARMED_SCRIPT = r"""
import json, sys
from pathlib import Path
from autograder.model.assignment import load_assignment
from autograder.grading.grade import grade_submission
from autograder.sandbox import Sandbox

sandbox = Sandbox("auto")
try:
    row = grade_submission(load_assignment("attention"), Path(sys.argv[1]), sandbox).to_json()
finally:
    sandbox.close()
print(json.dumps({q: v["score"] for q, v in row["questions"].items()}))
"""


def test_serving_the_calls_from_the_import_gains_nothing_only_because_the_arming_is_read(
        tmp_path):
    """A file whose top level never hands the worker back serves the graded calls itself,
    before the refusals hold. The trusted side reads from outside the worker (the fork server)
    that they hold before it sends any call: nothing that forbids a routine is graded there. A
    copy of the engine that skips that reading gives the same file full marks: the reading is
    what holds."""
    import test_hostile

    attack = HOSTILE / "arming_skipped_serving_from_import.py"

    def scores(root: Path) -> dict:
        r = subprocess.run([sys.executable, "-c", UNARMED_SCRIPT, str(attack)],
                           capture_output=True, text=True, cwd=root, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    held = scores(ROOT)
    assert held["softmax"] == 0 and held["block"] == 0
    assert held["split_heads"] > 0
    for part in ("autograder", "assignments", "reference", "student_template"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "snapshots-*"))
    session = tmp_path / "autograder" / "sandbox" / "session.py"
    text = session.read_text()
    broken = text.replace("if forbidden and not self.sandbox.armed(self.wid):",
                          "if False:")
    assert broken != text
    session.write_text(broken)
    skipped = scores(tmp_path)
    assert skipped["softmax"] > 0 and skipped["block"] > 0, skipped
    assert test_hostile.EXPECTED[attack.name]["softmax"] == 0
