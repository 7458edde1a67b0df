"""A seeded differential sweep of ``repr``/``str`` against PyTorch: random dtypes (bool to
complex128; bfloat16 on torch's backend), shapes (0-d, empty, 1-d to 4-d, large enough to be
summarised), values (magnitudes from 1e-9 to 1e9, integer-valued floats, signed zeros, nan,
inf, all-nan) and print options (precision, threshold, edgeitems, linewidth, profiles,
sci_mode), with and without ``requires_grad`` and a ``grad_fn``. PyTorch's text is the
specification, its ``torch.`` read as ``tensorweaver.`` (see test_printing_parity.py).

``SWEEP_PRINTING_CASES`` sets how many cases run per backend (the suite's share: 64).
A failing case names its seed: rerun it with ``_case(seed, backend)``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import DTYPE_NAMES
from test_printing_parity import SUFFIX_BREAK, as_tensorweaver

CASES = int(os.environ.get("SWEEP_PRINTING_CASES", "64"))
DTYPES = DTYPE_NAMES
OPTIONS = {
    "precision": [0, 1, 2, 6, 10],
    "threshold": [3, 10, 50, 1000],
    "edgeitems": [0, 1, 2, 4],
    "linewidth": [20, 40, 120],
    "sci_mode": [True, False],
    "profile": ["short", "full", "default"],
}
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, 0.5, 1e-5, 123456.0])


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if "int" in dtype:
        info = np.iinfo(dtype)
        high = min([10, 1000, int(info.max)][rng.integers(0, 3)], int(info.max))
        low = max(0 if dtype == "uint8" else -high, int(info.min))
        return rng.integers(low, high, shape, endpoint=True).astype(dtype)
    kind = int(rng.integers(0, 8))
    spread = 9 if kind == 0 else 3
    values = rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-spread, spread, shape)
    if kind == 3:
        values = np.round(rng.uniform(-100, 100, shape))
    elif kind == 4:
        values = np.round(rng.uniform(-1e5, 1e5, shape))
    elif kind >= 5:
        values = np.where(rng.random(shape) < 0.4, rng.choice(SPECIAL, shape), values)
    if kind == 7:
        values = np.full(shape, np.nan)
    if dtype.startswith("complex"):
        values = values + 1j * rng.choice([-1, 1], shape) * 10.0 ** rng.uniform(-3, 3, shape)
    return values


def _shape(rng: np.random.Generator) -> tuple:
    kind = int(rng.integers(0, 10))
    if kind == 0:
        return ()
    if kind == 1:  # empty (and 1-sized) shapes
        return tuple(int(n) for n in rng.integers(0, 3, int(rng.integers(1, 4))))
    ndim = int(rng.integers(1, 5))
    big = rng.random() < 0.25
    if ndim == 1:
        return (int(rng.integers(1, 1500 if big else 12)),)
    return tuple(int(n) for n in rng.integers(1, 14 if big else 5, ndim))


def _case(seed: int, backend: str) -> None:
    """One random tensor printed by both libraries under one set of print options."""
    rng = np.random.default_rng(seed)
    dtype = DTYPES[int(rng.integers(0, len(DTYPES)))]
    if dtype == "bfloat16" and backend != "torch:cpu":
        dtype = "float32"
    shape = _shape(rng)
    values = _values(rng, shape, dtype)
    options: dict[str, Any] = {}
    if rng.random() < 0.4:
        for name, choices in OPTIONS.items():
            if rng.random() < 0.3:
                options[name] = choices[int(rng.integers(0, len(choices)))]
    grad = dtype[0] in "fcb" and dtype != "bool" and rng.random() < 0.2
    through_op = grad and rng.random() < 0.5
    torch.set_printoptions(**options)
    tw.set_printoptions(**options)
    try:
        theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=grad)
        ours = tw.tensor(values, dtype=getattr(tw, dtype), requires_grad=grad)
        if through_op:
            theirs, ours = theirs * 2, ours * 2
        for show in (repr, str):
            mine, their = show(ours), show(theirs)
            if "torch." in their:
                mine, their = SUFFIX_BREAK.sub(", ", mine), SUFFIX_BREAK.sub(", ", their)
            assert mine == as_tensorweaver(their), (
                f"seed {seed}: {dtype} {shape} options={options} grad={grad}"
            )
    finally:
        torch.set_printoptions(profile="default")
        tw.set_printoptions(profile="default")


@pytest.mark.parametrize("block", range(4))
def test_random_tensors_print_like_torch(backend: str, block: int) -> None:
    for seed in range(block * CASES // 4, (block + 1) * CASES // 4):
        _case(seed, backend)


@pytest.mark.cunumeric
def test_a_few_print_like_torch_on_every_backend(backend: str) -> None:
    for seed in range(10_000, 10_008):
        _case(seed, backend)


# Objects around tensors, printed by both libraries (PyTorch's ``torch.`` read as ours).
OBJECTS = {
    "parameter": lambda m: m.nn.Parameter(m.ones(2)),
    "parameter_no_grad": lambda m: m.nn.Parameter(m.ones(2), requires_grad=False),
    "parameter_empty": lambda m: m.nn.Parameter(m.zeros(0, 3)),
    "list": lambda m: [m.tensor([1.5]), m.tensor(2)],
    "dict": lambda m: {"a": m.tensor([1, 2]), "b": m.zeros(2, 0)},
    "size": lambda m: m.ones(2, 3).shape,
    "size_0d": lambda m: m.ones(()).shape,
    "size_made": lambda m: m.Size([2, 3]),
    "dtypes": lambda m: [m.float32, m.bfloat16, m.complex64, m.bool, m.uint8, m.half, m.long],
    "max_dim": lambda m: m.tensor([[1.0, 5.0], [3.0, 2.0]]).max(1),
    "min_keepdim": lambda m: m.tensor([[1.0, 5.0], [3.0, 2.0]]).min(dim=0, keepdim=True),
    "sort": lambda m: m.sort(m.tensor([3, 1, 2])),
    "topk": lambda m: m.topk(m.tensor([3.0, 1, 2]), 2),
    "kthvalue": lambda m: m.tensor([3.0, 1, 2]).kthvalue(2),
    "var_mean": lambda m: m.var_mean(m.tensor([3.0, 1, 2])),
    "slogdet": lambda m: m.linalg.slogdet(m.eye(2)),
    "grad_sum": lambda m: m.tensor([1.0, 2.0], requires_grad=True).sum(),
    "grad_empty": lambda m: m.zeros(0, 2, requires_grad=True),
    "detached": lambda m: m.tensor([1.0, 2.0], requires_grad=True).detach(),
}


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_objects_print_like_torch(backend: str, name: str) -> None:
    ours, theirs = OBJECTS[name](tw), OBJECTS[name](torch)
    for show in (repr, str):
        assert show(ours) == as_tensorweaver(show(theirs))


@pytest.mark.parametrize("spec", ["", ".2f", "+.3e", ">9.1f"])
def test_format_like_torch(backend: str, spec: str) -> None:
    assert format(tw.tensor(1.23456), spec) == format(torch.tensor(1.23456), spec)
    with pytest.raises(TypeError) as theirs:
        format(torch.tensor([1.0, 2.0]), spec or "x")
    with pytest.raises(type(theirs.value)):
        format(tw.tensor([1.0, 2.0]), spec or "x")
