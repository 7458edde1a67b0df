"""Regression tests for the fifteenth session's parity fixes, each against torch 2.13: hypot in
half precision; the whole-tensor reductions' ``keepdim`` without ``dim`` (a TypeError, as
torch's, since the sixteenth session)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _outcome(m: Any, code: Callable) -> Any:
    """The error class raised, or the result's shape."""
    try:
        out = code(m)
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return type(error).__name__
    return tuple(out.shape)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_hypot_half_rounds_once_like_torch(backend: str, dtype: str) -> None:
    # bfloat16 hypot(0.5, -2.5) was 2.53125 (each step rounded), torch's 2.546875
    if getattr(tw, dtype) not in tw.empty(0).backend.dtypes:
        pytest.skip(f"{backend} has no {dtype}")
    rng = np.random.default_rng(15)
    # values exact in the dtype, so that the inputs' conversion plays no part
    pairs = torch.tensor(rng.standard_normal((2, 4000)) * 8).to(getattr(torch, dtype))
    pairs = torch.cat([pairs, torch.tensor([[0.5, 0.0, 60000.0], [-2.5, -0.0, 60000.0]])], 1)
    pairs = pairs.to(getattr(torch, dtype))
    want = torch.hypot(pairs[0], pairs[1])
    a, b = (tw.tensor(p.double().numpy()).to(getattr(tw, dtype)) for p in pairs)
    got = tw.hypot(a, b)
    assert got.dtype is getattr(tw, dtype)
    np.testing.assert_array_equal(got.double().numpy(), want.double().numpy())


#: Whole-tensor forms torch refuses (TypeError): keepdim= without dim.
KEEPDIM_WITHOUT_DIM = {
    "sum keepdim": lambda m, x: m.sum(x, keepdim=True),
    "sum keepdim=False": lambda m, x: m.sum(x, keepdim=False),
    "sum keepdim, dtype": lambda m, x: m.sum(x, keepdim=True, dtype=m.float64),
    "prod keepdim": lambda m, x: m.prod(x, keepdim=True),
    "mean keepdim": lambda m, x: m.mean(x, keepdim=True),
    "method sum keepdim": lambda m, x: x.sum(keepdim=True),
    "method prod keepdim": lambda m, x: x.prod(keepdim=True),
    "method mean keepdim": lambda m, x: x.mean(keepdim=True),
}

#: The forms torch takes, which a fix of the above must keep.
TAKEN = {
    "sum None keepdim": lambda m, x: m.sum(x, None, True),
    "sum dtype": lambda m, x: m.sum(x, dtype=m.float64),
    "mean dim=None keepdim": lambda m, x: m.mean(x, dim=None, keepdim=True),
    "method sum dim keepdim": lambda m, x: x.sum(1, keepdim=True),
    "method mean": lambda m, x: x.mean(),
}


def _same_as_torch(code: Callable) -> None:
    got = _outcome(tw, lambda m: code(m, m.ones(2, 3)))
    assert got == _outcome(torch, lambda m: code(m, m.ones(2, 3)))


@pytest.mark.parametrize("name", list(KEEPDIM_WITHOUT_DIM))
def test_whole_reductions_refuse_keepdim_without_dim(name: str) -> None:
    _same_as_torch(KEEPDIM_WITHOUT_DIM[name])


@pytest.mark.parametrize("name", list(TAKEN))
def test_whole_reductions_taken_like_torch(name: str) -> None:
    _same_as_torch(TAKEN[name])
