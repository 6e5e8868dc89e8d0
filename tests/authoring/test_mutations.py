"""The mutants `autograder mutants` derives from a reference (`authoring/mutations.py`): the
slips the issue lists, each made by rewriting the syntax tree of one function, with nothing
outside the functions touched and no two mutants the same code."""
from __future__ import annotations

import ast

from autograder.authoring.mutations import derive_mutants

TORCH = '''\
"""A reference."""
import math

import torch

ANSWER = 4


def attend(q: torch.Tensor, k, v, mask=None, eps=1e-5):
    """Attention."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    total = weights.sum(dim=-1, keepdim=True) + eps
    return weights @ v, weights[..., 1:] - x_prev(q)


def x_prev(x):
    return -x[..., :-1]
'''

NUMPY = TORCH.replace("import torch", "import numpy as np").replace("torch.", "np.")


def changes(source: str) -> set[tuple[str, str, str]]:
    return {(m.function, m.before, m.after) for m in derive_mutants(source)}


def test_the_slips_of_the_issue_are_derived():
    found = changes(TORCH)
    scores = "q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"
    expected = {
        # matmul operands swapped or transposed
        ("attend", "q @ k.transpose(-2, -1)", "k.transpose(-2, -1) @ q"),
        ("attend", "q @ k.transpose(-2, -1)", "q.mT @ k.transpose(-2, -1)"),
        ("attend", "weights @ v", "weights @ v.mT"),
        # a scale dropped, squared, inverted, applied a step late
        ("attend", scores, "q @ k.transpose(-2, -1)"),
        ("attend", scores, "q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])"),
        ("attend", "math.sqrt(q.shape[-1])", "q.shape[-1]"),
        # an axis or dim changed, keepdim dropped
        ("attend", "-1", "-2"),
        ("attend", "torch.softmax(scores, dim=-1)", "torch.softmax(scores)"),
        ("attend", "weights.sum(dim=-1, keepdim=True)", "weights.sum(dim=-1)"),
        ("attend", "True", "False"),
        # off by one in a slice
        ("attend", "1", "2"),
        ("x_prev", "-1", "0"),
        # a sign flipped
        ("x_prev", "-x[..., :-1]", "x[..., :-1]"),
        ("attend", "'-inf'", "'inf'"),
        # a constant changed
        ("attend", "1e-05", "0.0"),
        # a step, a condition, a mask left out
        ("attend", "scores = scores.masked_fill(mask, float('-inf'))", "(nothing)"),
        ("attend", "mask is not None", "mask is None"),
        ("attend", "scores.masked_fill(mask, float('-inf'))", "scores"),
        # what is returned
        ("attend", "return (weights @ v, weights[..., 1:] - x_prev(q))",
         "return (weights[..., 1:] - x_prev(q), weights @ v)"),
        # the other function's result used without its subtraction
        ("attend", "weights[..., 1:] - x_prev(q)", "weights[..., 1:]"),
    }
    assert expected <= found, sorted(expected - found)
    squared = "/ (math.sqrt(q.shape[-1]) * math.sqrt(q.shape[-1]))"
    assert any(squared in ast.unparse(m.changed) for m in derive_mutants(TORCH))
    detached = {m for m in found if ".detach()" in m[2]}
    assert ("attend", "weights = torch.softmax(scores, dim=-1)",
            "weights = torch.softmax(scores, dim=-1).detach()") in detached


def test_a_scale_applied_a_step_later_moves_to_the_next_assignment_reading_it():
    late = [m for m in derive_mutants(TORCH) if m.operator == "a scale applied one step later"]
    assert len(late) == 1
    code = ast.unparse(late[0].changed)
    assert "scores = q @ k.transpose(-2, -1)\n" in code
    assert "weights = torch.softmax(scores, dim=-1) / math.sqrt(q.shape[-1])" in code


def test_an_input_changed_in_place():
    source = "def center(x, m):\n    return x - m\n\n\ndef opt(x, eps=1e-5):\n    return eps - x\n"
    found = changes(source)
    assert ("center", "x - m", "x.__isub__(m)") in found
    assert not any("__i" in after for f, _, after in found if f == "opt")


def test_torch_only_slips_stay_out_of_numpy_code():
    assert not any(".detach()" in after for _, _, after in changes(NUMPY))
    assert any(".detach()" in after for _, _, after in changes(TORCH))


def test_only_the_functions_code_is_changed():
    mutants = derive_mutants(TORCH)
    original = ast.parse(TORCH)
    for m in mutants:
        # The module is the reference with one function replaced, by a function of that name.
        changed = [(a, b) for a, b in zip(original.body, m.module.body)
                   if ast.dump(a) != ast.dump(b)]
        assert len(changed) == 1 and changed[0][1] is m.changed
        assert m.changed.name == m.function
        compile(m.module, "reference.py", "exec")
        # Docstrings and annotations are left alone.
        assert ast.get_docstring(m.changed) == ast.get_docstring(changed[0][0])
        assert ast.dump(m.changed.args.args[0].annotation or ast.Pass()) == ast.dump(
            changed[0][0].args.args[0].annotation or ast.Pass())
    assert len({ast.dump(m.changed) for m in mutants}) == len(mutants)
    assert len({m.id for m in mutants}) == len(mutants)
    assert {m.function for m in derive_mutants(TORCH, {"x_prev"})} == {"x_prev"}


def test_lines_point_at_the_change():
    mutants = derive_mutants(TORCH)
    spans = {n.name: (n.lineno, n.end_lineno) for n in ast.parse(TORCH).body
             if isinstance(n, ast.FunctionDef)}
    for m in mutants:
        assert spans[m.function][0] <= m.line <= spans[m.function][1]
    lines = TORCH.splitlines()
    for m in mutants:
        if m.before in ("mask is not None", "'-inf'", "x[..., :-1]"):
            assert m.before.replace("'", '"') in lines[m.line - 1], (m.id, m.before)
