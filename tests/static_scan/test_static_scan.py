"""The trusted static scan: every route to a library shortcut and every way of touching the
grader is found in the source; honest idioms are not. Nothing here runs the scanned code."""
import textwrap
from pathlib import Path

import pytest

from helpers import ROOT, SUBMISSIONS

from autograder.model.assignment import load_assignment
from autograder.grading.runner import load_question_file
from autograder.static_scan import names_same_routine, scan_source

API = ["softmax", "scaled_dot_product_attention", "causal_mask", "split_heads", "merge_heads",
       "multi_head_attention", "layer_norm", "transformer_block"]
SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax",
           "torch.special.softmax", "autograd.SoftmaxBackward0", "autograd.SafeSoftmaxBackward0"]
LAYER_NORM = ["torch.nn.functional.layer_norm", "torch.layer_norm",
              "autograd.NativeLayerNormBackward0"]
ATTENTION = ["torch.nn.functional.scaled_dot_product_attention",
             "torch.nn.functional.multi_head_attention_forward"]
SCIPY = ["scipy.special.softmax", "scipy.special.log_softmax"] + SOFTMAX[:4]


def scan(source: str):
    return scan_source(textwrap.dedent(source), API)


def shortcuts(source: str, function: str = "softmax", entries=SOFTMAX, words=None) -> list:
    """The scan's shortcuts among `entries`, with the attention assignment's other words for
    each routine (`also_named`: "softmin" for the softmax)."""
    if words is None:
        from autograder.model.assignment import load_assignment

        table = load_assignment("attention").routines
        words = {e: table.also_named(e) for e in entries}
    return scan(source).forbidden(function, entries, words)


# ------------------------------------------------------------------ library shortcuts

CAUGHT = {
    "full attribute chain": """
        import torch
        def softmax(x, dim=-1):
            return torch.nn.functional.softmax(x, dim=dim)
    """,
    "tensor method": """
        def softmax(x, dim=-1):
            return x.softmax(dim)
    """,
    "module alias": """
        import torch.nn.functional as F
        def softmax(x, dim=-1):
            return F.softmax(x, dim)
    """,
    "from-import alias": """
        from torch.nn import functional as nnf
        def softmax(x, dim=-1):
            return nnf.softmax(x, dim)
    """,
    "function imported under another name": """
        from torch import softmax as s
        def softmax(x, dim=-1):
            return s(x, dim)
    """,
    "getattr with a constant": """
        import torch
        def softmax(x, dim=-1):
            return getattr(torch, "softmax")(x, dim)
    """,
    "getattr with concatenated strings": """
        import torch.nn.functional as F
        def softmax(x, dim=-1):
            return getattr(F, "soft" + "max")(x, dim)
    """,
    "getattr with a joined, reversed name bound to a variable": """
        import torch
        NAME = "".join(["xam", "tfos"])[::-1]
        def softmax(x, dim=-1):
            return getattr(x, NAME)(dim)
    """,
    "importlib": """
        import importlib
        def softmax(x, dim=-1):
            return importlib.import_module("torch.nn.functional").softmax(x, dim)
    """,
    "__import__ with fromlist": """
        def softmax(x, dim=-1):
            return __import__("torch.nn.functional", fromlist=["softmax"]).softmax(x, dim)
    """,
    "__import__ of the package": """
        def softmax(x, dim=-1):
            return __import__("torch").special.softmax(x, dim)
    """,
    "sys.modules lookup": """
        import sys
        def softmax(x, dim=-1):
            return sys.modules["torch"].softmax(x, dim)
    """,
    "vars() of the module": """
        import torch
        def softmax(x, dim=-1):
            return vars(torch)["softmax"](x, dim)
    """,
    "torch.ops.aten": """
        import torch
        def softmax(x, dim=-1):
            return torch.ops.aten._softmax.default(x, dim, False)
    """,
    "torch._C": """
        import torch
        def softmax(x, dim=-1):
            return torch._C._VariableFunctions.softmax(x, dim)
    """,
    "log_softmax(...).exp()": """
        import torch
        def softmax(x, dim=-1):
            return torch.log_softmax(x, dim).exp()
    """,
    "log_softmax method": """
        def softmax(x, dim=-1):
            return x.log_softmax(dim).exp()
    """,
    "softmin of the negation": """
        import torch.nn.functional as F
        def softmax(x, dim=-1):
            return F.softmin(-x, dim)
    """,
    "module class": """
        import torch
        def softmax(x, dim=-1):
            return torch.nn.Softmax(dim=dim)(x)
    """,
    "decomposition module": """
        import torch._decomp.decompositions as D
        def softmax(x, dim=-1):
            return D._softmax(x, dim, False)
    """,
    "torch._refs": """
        import torch
        def softmax(x, dim=-1):
            return torch._refs.exp(x) / torch._refs.sum(torch._refs.exp(x), dim, keepdim=True)
    """,
    "torch._prims": """
        import torch._prims as P
        def softmax(x, dim=-1):
            e = P.exp(x)
            return e / e.sum(dim, keepdim=True)
    """,
    "library kernel inside a custom autograd.Function": """
        import torch
        class K(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, dim):
                y = torch._softmax(x, dim, False)
                ctx.save_for_backward(y)
                return y
            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return y * (g - (g * y).sum(-1, keepdim=True)), None
        def softmax(x, dim=-1):
            return K.apply(x, dim)
    """,
    "torch-function handling disabled": """
        import torch
        def _mine(x, dim):
            e = (x - x.amax(dim, keepdim=True)).exp()
            return e / e.sum(dim, keepdim=True)
        def softmax(x, dim=-1):
            with torch._C.DisableTorchFunction():
                return _mine(x, dim)
    """,
    "torch.overrides internals": """
        import torch
        def softmax(x, dim=-1):
            with torch.overrides._pop_mode_temporarily():
                e = x.exp()
                return e / e.sum(dim, keepdim=True)
    """,
    "getattr with a name built at run time": """
        import torch
        def softmax(x, dim=-1):
            name = input()
            return getattr(torch, name)(x, dim)
    """,
    "module-level alias used in the function": """
        import torch.nn.functional as F
        SM = F.softmax
        def softmax(x, dim=-1):
            return SM(x, dim)
    """,
    "the graded name bound to the library function": """
        import torch
        softmax = torch.softmax
    """,
    "a partial of the library function": """
        import functools, torch
        softmax = functools.partial(torch.softmax, dim=-1)
    """,
    "a lambda": """
        import torch.nn.functional as F
        softmax = lambda x, dim=-1: F.softmax(x, dim)
    """,
    "a default argument": """
        import torch
        def softmax(x, dim=-1, _f=torch.softmax):
            return _f(x, dim)
    """,
    "star import": """
        from torch.nn.functional import *
        def softmax(x, dim=-1):
            return log_softmax(x, dim).exp()
    """,
    "a helper two calls away": """
        import torch.nn.functional as F
        def _inner(x, dim):
            return F.softmax(x, dim)
        def _outer(x, dim):
            return _inner(x, dim)
        def softmax(x, dim=-1):
            return _outer(x, dim)
    """,
    "a method of the student's own class": """
        import torch
        class Helper:
            def run(self, x, dim):
                return self.kernel(x, dim)
            def kernel(self, x, dim):
                return torch.special.softmax(x, dim)
        def softmax(x, dim=-1):
            return Helper().run(x, dim)
    """,
    "a container of functions": """
        import torch.nn.functional as F
        TABLE = {"sm": F.softmax}
        def softmax(x, dim=-1):
            return TABLE["sm"](x, dim)
    """,
    "exec of a constant string": """
        def softmax(x, dim=-1):
            exec("import torch; y = torch.softmax(x, -1)")
            return x
    """,
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_every_route_to_the_library_softmax_is_caught(name):
    found = shortcuts(CAUGHT[name])
    assert found, name
    assert all(f.kind == "forbidden" for f in found)


def test_other_words_of_a_routine_are_the_assignments_not_the_engines():
    """`softmin` names the softmax only because the assignment says so (`also_named`)."""
    source = CAUGHT["softmin of the negation"]
    assert shortcuts(source)
    assert not shortcuts(source, words={})


def test_a_finding_names_the_line_and_what_it_reaches():
    found = shortcuts(CAUGHT["getattr with concatenated strings"])
    assert found[0].line == 4
    assert "torch.nn.functional.softmax" in found[0].describe()


def test_scipy_shortcuts_on_the_numpy_track():
    src = """
        from scipy.special import softmax as sm
        import scipy.special._logsumexp as L
        def softmax(x, axis=-1):
            return sm(x, axis=axis)
        def other(x):
            return L.log_softmax(x)
    """
    assert shortcuts(src, "softmax", SCIPY)
    assert shortcuts(src.replace("return sm(", "return other(") + "\n", "softmax", SCIPY)


def test_layer_norm_routes():
    for body in ("F.layer_norm(x, x.shape[-1:], gamma, beta, eps)",
                 "torch.nn.LayerNorm(x.shape[-1])(x)",
                 "torch.native_layer_norm(x, x.shape[-1:], gamma, beta, eps)[0]",
                 "torch.ops.aten.native_layer_norm.default(x, [x.shape[-1]], gamma, beta, eps)[0]"):
        src = f"""
            import torch
            import torch.nn.functional as F
            def layer_norm(x, gamma, beta, eps=1e-5):
                return {body}
        """
        assert shortcuts(src, "layer_norm", LAYER_NORM), body


def test_attention_routes():
    for body in ("F.scaled_dot_product_attention(q, k, v)",
                 "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]",
                 "torch._C._nn.scaled_dot_product_attention(q, k, v)"):
        src = f"""
            import torch
            import torch.nn.functional as F
            def scaled_dot_product_attention(q, k, v, mask=None):
                return {body}
        """
        assert shortcuts(src, "scaled_dot_product_attention", ATTENTION), body
    mha = """
        import torch
        def multi_head_attention(x, params, n_heads, mask=None, context=None):
            m = torch.nn.MultiheadAttention(x.shape[-1], n_heads)
            return m(x, x, x)[0]
    """
    assert shortcuts(mha, "multi_head_attention", ATTENTION)


def test_a_helper_counts_for_every_function_that_calls_it():
    src = """
        import torch.nn.functional as F
        def _norm(x, g, b, eps):
            return F.layer_norm(x, x.shape[-1:], g, b, eps)
        def layer_norm(x, gamma, beta, eps=1e-5):
            return _norm(x, gamma, beta, eps)
        def transformer_block(x, params, n_heads, mask=None):
            return _norm(x, params["g"], params["b"], 1e-5)
        def causal_mask(T):
            return None
    """
    assert shortcuts(src, "layer_norm", LAYER_NORM)
    assert shortcuts(src, "transformer_block", LAYER_NORM)
    assert not shortcuts(src, "causal_mask", LAYER_NORM)


# ------------------------------------------------------------------ honest idioms

HONEST = {
    "a user function named softmax, called from attention": """
        import math, torch
        def softmax(x, dim=-1):
            e = torch.exp(x - x.amax(dim=dim, keepdim=True))
            return e / e.sum(dim=dim, keepdim=True)
        def scaled_dot_product_attention(q, k, v, mask=None):
            w = softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
            return w @ v, w
    """,
    "names in comments, strings and docstrings": """
        import torch
        def softmax(x, dim=-1):
            '''Like torch.softmax or F.softmax, but written by hand; not x.softmax(dim).'''
            # torch.nn.functional.softmax(x) would be the shortcut
            note = "torch.softmax"
            e = torch.exp(x - x.amax(dim=dim, keepdim=True))
            return e / e.sum(dim=dim, keepdim=True)
    """,
    "the library softmax in another question's function": """
        import torch
        def softmax(x, dim=-1):
            e = torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
            return e
        def scaled_dot_product_attention(q, k, v, mask=None):
            w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
            return w @ v, w
    """,
    "a method called softmax on the student's own object": """
        import torch
        class Stable:
            def softmax(self, x, dim):
                e = torch.exp(x - x.amax(dim=dim, keepdim=True))
                return e / e.sum(dim=dim, keepdim=True)
            def __call__(self, x, dim):
                return self.softmax(x, dim)
        def softmax(x, dim=-1):
            return Stable()(x, dim)
    """,
    "a comparison with the library in a main block": """
        import torch
        def softmax(x, dim=-1):
            e = torch.exp(x - x.amax(dim=dim, keepdim=True))
            return e / e.sum(dim=dim, keepdim=True)
        if __name__ == "__main__":
            x = torch.randn(3)
            print(softmax(x), torch.softmax(x, -1), x.softmax(-1))
    """,
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_idioms_are_not_shortcuts(name):
    result = scan(HONEST[name])
    assert result.forbidden("softmax", SOFTMAX) == [], name
    assert result.tamper == [] and result.review == [], name


def test_routine_names():
    assert names_same_routine("_softmax", "softmax")
    assert names_same_routine("LayerNorm", "layer_norm")
    assert names_same_routine("_scaled_dot_product_flash_attention", "scaled_dot_product_attention")
    assert names_same_routine("MultiheadAttention", "multi_head_attention_forward")
    assert not names_same_routine("logsumexp", "softmax")
    assert not names_same_routine("group_norm", "layer_norm")
    assert not names_same_routine("functional", "softmax")


# ------------------------------------------------------------------ tampering with the grader

TAMPER = {
    "engine import": "import autograder.sandbox.execute as ex\n",
    "engine from-import": "from autograder.sandbox import worker\n",
    "engine through sys.modules": "import sys\nm = sys.modules['autograder.sandbox.execute']\n",
    "engine through importlib": "import importlib\nimportlib.import_module('autograder')\n",
    "sys.modules scan": "import sys\nfor name, m in sys.modules.items():\n    pass\n",
    "sys.modules by a computed key": "import sys\nm = sys.modules[__name__]\n",
    "sys.modules changed": "import sys\nsys.modules['torch'] = None\n",
    "sys._getframe": "import sys\nf = sys._getframe(1)\n",
    "getattr(sys, '_get' + 'frame')": "import sys\nf = getattr(sys, '_get' + 'frame')(0)\n",
    "inspect.currentframe": "import inspect\nf = inspect.currentframe()\n",
    "f_back": "def g(frame):\n    return frame.f_back\n",
    "f_globals": "def g(frame):\n    return frame.f_globals\n",
    "tb_frame": "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame\n",
    "gc.get_objects": "import gc\nobjs = gc.get_objects()\n",
    "gc.get_referrers": "from gc import get_referrers\nget_referrers(1)\n",
    "ctypes": "import ctypes\n",
    "ctypes from-import": "from ctypes import CDLL\n",
    "os.write to an unknown fd": "import os\nfor fd in range(3, 64):\n    os.write(fd, b'x')\n",
    "os.write to a listed fd": "import os\nfor n in os.listdir('/proc/self/fd'):\n"
                               "    os.write(int(n), b'x')\n",
    "os.closerange": "import os\nos.closerange(3, 100)\n",
    "socket on an existing fd": "import socket\ns = socket.socket(fileno=3)\n",
    "socket.fromfd": "import socket\ns = socket.fromfd(3, socket.AF_UNIX, socket.SOCK_STREAM)\n",
    "open an fd by number": "f = open(3, 'wb')\n",
    "open /proc/self/fd": "f = open('/proc/self/fd/3', 'wb')\n",
    "patch a torch function": "import torch\ntorch.allclose = lambda *a, **k: True\n",
    "patch a Tensor method": "import torch\ntorch.Tensor.__eq__ = lambda a, b: True\n",
    "setattr on numpy": "import numpy as np\nsetattr(np, 'allclose', lambda *a: True)\n",
    "patch builtins": "import builtins\nbuiltins.isinstance = lambda *a: True\n",
    "exec of a built string": "code = input()\nexec(code)\n",
    "exec of a constant that imports ctypes": "exec('import ctypes')\n",
    "__import__ by a computed name": "name = input()\n__import__(name)\n",
    "subclasses scan": "classes = object.__subclasses__()\n",
}


@pytest.mark.parametrize("name", sorted(TAMPER))
def test_every_way_of_touching_the_grader_is_flagged_for_review(name):
    """Each is a doubt (the worker's run-time checks decide what it did), never proof."""
    result = scan(TAMPER[name])
    assert result.review, name
    assert all(f.kind == "review" and f.line >= 1 for f in result.review)
    assert result.tamper == [], name


# Stores into the engine's own modules, resolved statically: the proof that withholds points.
PROVEN = {
    "an attribute of the engine through sys.modules.get":
        "import sys\nm = sys.modules.get('autograder.sandbox.execute')\n"
        "m._ForbiddenFunctions.__torch_function__ = None\n",
    "setattr on an imported engine module":
        "import autograder.sandbox.worker as w\nsetattr(w, 'run_call', print)\n",
    "an engine entry of sys.modules replaced":
        "import sys\nsys.modules['autograder.sandbox.execute'] = None\n",
    "the engine's namespace through vars()":
        "import importlib\nvars(importlib.import_module('autograder.sandbox.worker'))"
        "['run_call'] = print\n",
    "a del in the engine": "import autograder.sandbox.worker as w\ndel w.run_call\n",
    "inside a helper, with a built name":
        "import sys\ndef _off():\n    e = sys.modules['auto' + 'grader.sandbox.execute']\n"
        "    e._graph_nodes = lambda *a: set()\n",
}


@pytest.mark.parametrize("name", sorted(PROVEN))
def test_a_store_into_the_engine_is_proven_tampering(name):
    result = scan(PROVEN[name])
    assert [f.rule for f in result.tamper] == ["engine-store"], name
    assert result.tamper[0].kind == "tamper" and "grader's own code" in result.tamper[0].why


NOT_TAMPER = {
    "sys.exit at the bottom": "import sys\ndef main():\n    return 0\nsys.exit(main())\n",
    "a main block": "import sys\nif __name__ == '__main__':\n    print(sys.argv)\n",
    "sys.path": "import sys\nprint(sys.path)\nsys.path.insert(0, '.')\n",
    "gc.collect": "import gc\ngc.collect()\n",
    "recursion limit": "import sys\nsys.setrecursionlimit(5000)\n",
    "a module lookup by constant": "import sys\nt = sys.modules.get('torch')\n"
                                   "colab = 'google.colab' in sys.modules\n",
    "writing to stdout and stderr": "import os, sys\nos.write(1, b'x')\nfor fd in (1, 2):\n"
                                    "    os.write(fd, b'y')\nos.write(sys.stderr.fileno(), b'z')\n",
    "a descriptor it opened": "import os\nfd = os.open('f', os.O_WRONLY)\nos.write(fd, b'x')\n"
                              "os.close(fd)\nr, w = os.pipe()\nos.write(w, b'x')\nos.close(r)\n",
    "open a path": "def load(path):\n    with open(path) as f:\n        return f.read()\n",
    "torch settings and seeds": "import torch\ntorch.manual_seed(0)\n"
                                "torch.backends.cudnn.deterministic = True\n",
    "eval of a constant": "eps = eval('1e-5')\n",
    "tracebacks printed": "import traceback\ntry:\n    1 / 0\nexcept Exception:\n"
                          "    traceback.print_exc()\n",
    "attributes of the student's own objects": "def f(x):\n    x.grad = None\n"
                                               "    class A:\n        pass\n    a = A()\n"
                                               "    a.value = 1\n    return a\n",
    "the words in comments and strings": "# sys._getframe, gc.get_objects, import ctypes\n"
                                         "s = 'autograder.sandbox.execute and sys.modules'\n",
}


@pytest.mark.parametrize("name", sorted(NOT_TAMPER))
def test_honest_uses_of_sys_gc_and_os_are_not_flagged(name):
    result = scan(NOT_TAMPER[name])
    assert result.tamper == [] and result.review == [], name


ENGINE_STORE = "import sys\nsys.modules['autograder.sandbox.worker'].run_call = print\n"


def test_tampering_at_import_can_affect_every_question():
    reach = scan(ENGINE_STORE + "def softmax(x):\n    return x\n")
    assert list(reach.tamper_reach().values()) == [None]


def test_tampering_inside_a_function_runs_from_its_first_call():
    src = """
        import sys
        def _steal():
            sys.modules["autograder.sandbox.worker"].run_call = print
        def layer_norm(x, g, b, eps=1e-5):
            return _steal()
        def transformer_block(x, params, n_heads, mask=None):
            return layer_norm(x, 1, 0)
        def softmax(x, dim=-1):
            return x
    """
    reach = scan(src).tamper_reach()
    assert list(reach.values()) == [{"layer_norm", "transformer_block"}]


def test_a_dead_function_counts_as_import_time():
    source = "import sys\ndef _unused():\n    sys.modules['autograder.x'].y = 1\n"
    reach = scan(source).tamper_reach()
    assert list(reach.values()) == [None]


# ------------------------------------------------------------------ the corpora

def _forbidden_lists(name: str) -> dict[str, list[str]]:
    """Each question's functions and forbidden list, from the assignment's question files."""
    from autograder.cases import questions_in

    a = load_assignment(name)
    out = {}
    for q in a.questions:
        load_question_file(str(q.test_file))
        entries = [n for question in questions_in(q.test_file) for n in question.forbidden]
        for fn in q.functions:
            out[fn] = entries
    return out


HONEST_FILES = sorted((SUBMISSIONS / "correct").glob("*.py")) + \
    sorted((SUBMISSIONS / "wrong").glob("*.py")) + \
    sorted((SUBMISSIONS / "numpy").glob("*/*.py")) + \
    sorted((ROOT / "student_template").glob("*.py")) + sorted((ROOT / "reference").glob("*.py"))
# Wrong submissions whose mistake is the shortcut itself.
SHORTCUT_FILES = {"softmax_calls_torch_softmax.py": {"softmax"},
                  "layer_norm_calls_F_layer_norm.py": {"layer_norm", "transformer_block"},
                  "softmax_scipy_shortcut.py": {"softmax"}}


@pytest.mark.parametrize("path", HONEST_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_false_findings_on_the_corpora(path: Path):
    name = "attention_numpy" if "numpy" in str(path.relative_to(ROOT)) else "attention"
    lists = _forbidden_lists(name)
    contracts = {fn: sig.params for fn, sig in load_assignment(name).api.items()}
    result = scan_source(path.read_text(), list(lists), contracts)    # as the grader does
    assert result.tamper == [] and result.review == []
    flagged = {fn for fn, entries in lists.items() if result.forbidden(fn, entries)}
    assert flagged == SHORTCUT_FILES.get(path.name, set())
