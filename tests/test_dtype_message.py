"""The dtype message fits the function: "keep the input's dtype" only when there is one."""
import numpy as np
import torch

from autograder.checking.question import _float_dtypes
from autograder.checking.checks import compare_tensor


def test_no_float_input_is_not_told_to_keep_it():
    # e.g. a positional encoding of (T, d): integers in, float32 out
    inputs = ((4, 8), {})
    assert _float_dtypes(inputs) == set()
    [p] = compare_tensor(torch.zeros(4, 8), torch.zeros(4, 8, dtype=torch.float64), "the output",
                         input_dtypes=_float_dtypes(inputs))
    assert "expected dtype float32, got float64" in p.public
    assert "input" in p.public and "keep the input's dtype" not in p.public
    assert "no float32 input is passed" in p.public


def test_float_inputs_keep_the_message():
    x = torch.zeros(2, 3, dtype=torch.float64)
    [p] = compare_tensor(x, x.float(), "the output", input_dtypes=_float_dtypes(((x,), {})))
    assert "converted the float64 input to float32" in p.public
    a = np.zeros(3, dtype=np.float32)
    [p] = compare_tensor(a, a.astype(np.float64), "the output",
                         input_dtypes=_float_dtypes(((a,), {})))
    assert "promoted the float32 input" in p.public
