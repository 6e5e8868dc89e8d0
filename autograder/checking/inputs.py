"""Case inputs, for question files (through `autograder.cases`): literal and seeded tensors and
arrays, masks and weight dicts, all made in the grader's process so that student code cannot
influence them; and the seeded upstream gradient a check sends back through the output.

Seeded inputs are made once per process and handed out again (`_memoized`): every submission's
question files ask for the same ones, and the trusted caches recognise a tensor they have seen.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch

from ..sandbox.execute import iter_arrays
from ..sandbox.wire import Record


def _dtype(name: str | torch.dtype) -> torch.dtype:
    return name if isinstance(name, torch.dtype) else getattr(torch, name)


def tensor(data, dtype: str = "float32") -> torch.Tensor:
    """A literal tensor, e.g. `tensor([1.0, 2.0, 3.0])`."""
    return torch.tensor(data, dtype=_dtype(dtype))


def array(data, dtype: str = "float32") -> np.ndarray:
    """A literal NumPy array, e.g. `array([1.0, 2.0, 3.0])`."""
    return np.array(data, dtype=np.dtype(dtype))


def to_numpy(value: Any) -> Any:
    """The same inputs as NumPy arrays: every tensor inside tuples/lists/dicts is converted
    (dtype kept), e.g. `to_numpy(randn(2, 3, seed=1))` or `to_numpy(block_params(8, 16, seed=2))`."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, (tuple, list)):
        return type(value)(to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    return value


_made: dict[tuple, tuple[torch.Tensor, int]] = {}
_made_lock = threading.Lock()


def _memoized(make):
    """Every submission's question files ask for the same seeded inputs: make each once and
    hand out the same tensor, which lets the trusted caches (`fingerprint`) recognise it.
    A tensor changed in place since (its version counter moved) is made afresh."""

    def wrapper(*shape, **options):
        key = (make.__name__, shape, tuple(sorted(options.items())))
        with _made_lock:
            hit = _made.get(key)
        if hit is not None and hit[0]._version == hit[1]:
            return hit[0]
        t = make(*shape, **options)
        with _made_lock:
            _made[key] = (t, t._version)
        return t

    wrapper.__name__, wrapper.__doc__ = make.__name__, make.__doc__
    return wrapper


@_memoized
def randn(*shape: int, seed: int, dtype: str = "float32", scale: float = 1.0,
          shift: float = 0.0) -> torch.Tensor:
    """Seeded normal values (generated in this process: the student cannot influence them)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale + shift).to(_dtype(dtype))


@_memoized
def random_mask(*shape: int, seed: int, p: float = 0.3) -> torch.Tensor:
    """A seeded bool mask (True = blocked) that never blocks a whole row."""
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(*shape, generator=g) < p
    m[..., 0] = False
    return m


@_memoized
def future_mask(T: int) -> torch.Tensor:
    """The causal mask, built here so other questions never depend on the student's."""
    return torch.ones(T, T, dtype=torch.bool).triu(1)


def attention_params(d_model: int, *, seed: int, dtype: str = "float32") -> dict:
    names = ["w_q", "w_k", "w_v", "w_o"]
    return {n: randn(d_model, d_model, seed=seed + i, dtype=dtype, scale=d_model ** -0.5)
            for i, n in enumerate(names)}


def block_params(d_model: int, d_ff: int, *, seed: int, dtype: str = "float32") -> dict:
    p = attention_params(d_model, seed=seed, dtype=dtype)
    p.update(
        ln1_gamma=randn(d_model, seed=seed + 10, dtype=dtype, scale=0.2, shift=1.0),
        ln1_beta=randn(d_model, seed=seed + 11, dtype=dtype, scale=0.2),
        w1=randn(d_model, d_ff, seed=seed + 12, dtype=dtype, scale=d_model ** -0.5),
        b1=randn(d_ff, seed=seed + 13, dtype=dtype, scale=0.1),
        w2=randn(d_ff, d_model, seed=seed + 14, dtype=dtype, scale=d_ff ** -0.5),
        b2=randn(d_model, seed=seed + 15, dtype=dtype, scale=0.1),
        ln2_gamma=randn(d_model, seed=seed + 16, dtype=dtype, scale=0.2, shift=1.0),
        ln2_beta=randn(d_model, seed=seed + 17, dtype=dtype, scale=0.2),
    )
    return p


def upstream_for(output: Any, seed: int) -> Any:
    """A seeded random gradient shaped like each floating-point tensor of `output`."""
    g = torch.Generator().manual_seed(seed)

    def make(value):
        if isinstance(value, torch.Tensor):
            if not value.is_floating_point():
                return None
            return torch.randn(value.shape, generator=g, dtype=torch.float64).to(value.dtype)
        if isinstance(value, Record):
            return Record(value.kind, value.type_name,
                          {k: make(v) for k, v in value.fields.items()})
        if isinstance(value, tuple):
            return tuple(make(v) for v in value)
        if isinstance(value, list):
            return [make(v) for v in value]
        if isinstance(value, dict):
            return {k: make(v) for k, v in value.items()}
        return None

    result = make(output)
    # No floating-point tensor anywhere (NumPy outputs, say): no gradient to ask for.
    return None if not list(iter_arrays(result)) else result


def upstream_for_part(output: Any, part: tuple, seed: int) -> Any:
    """`upstream_for` the place `part` of `output` only, placed where it lies in `output` (None
    everywhere else): the gradient check of a case that compares one part of the output."""
    if not part:
        return upstream_for(output, seed)

    def placed(value: Any, rest: tuple) -> Any:
        if not rest:
            return upstream_for(value, seed)
        step, more = rest[0], rest[1:]
        if isinstance(value, Record):
            return Record(value.kind, value.type_name,
                          {k: placed(v, more) if k == step else None
                           for k, v in value.fields.items()})
        if isinstance(value, (tuple, list)):
            return type(value)(placed(v, more) if i == step else None
                               for i, v in enumerate(value))
        return {k: placed(v, more) if k == step else None for k, v in value.items()}

    result = placed(output, part)
    return None if not list(iter_arrays(result)) else result
