"""Python numbers as operands of float16 / bfloat16 tensors, bit for bit as torch 2.13's CPU
kernels (session 17).

PyTorch reads a Python float beside a half tensor as float32 first: ``add``/``sub``, writes
(setitem, masked_fill, index_fill, fill_, where) and bounds (clamp, threshold, hardtanh)
then round that float32 to the half type; ``mul``/``div`` compute in float32 with it and
round once. Before session 17 the NumPy backend rounded the double straight to float16
(NumPy's one rounding): 40-64 of 192 near-half-way values differed for each op below.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

Op = Callable[[Any, Any, float], Any]


def _near_halfway(dtype: torch.dtype, seed: int, count: int) -> list[float]:
    """Doubles one double-ulp beside mid-points of neighbouring ``dtype`` values (seeded),
    where rounding once and rounding through float32 differ; and a few plain draws."""
    rng = np.random.default_rng(seed)
    low = torch.tensor(rng.uniform(-1000, 1000, count)).to(dtype)
    high = torch.nextafter(low, torch.tensor(float("inf"), dtype=dtype))
    mid = (low.double() + high.double()) / 2
    beside = [float(np.nextafter(m, m + side)) for m in mid.tolist() for side in (-1, 1)]
    return beside + [float(v) for v in rng.uniform(-3, 3, count // 2)]


def _setitem(t: Any, value: float) -> Any:
    t = t.clone()
    t[1:3] = value
    return t


OPS: dict[str, Op] = {
    "setitem": lambda m, x, s: _setitem(x, s),
    "masked_fill": lambda m, x, s: x.masked_fill(x > 0, s),
    "index_fill": lambda m, x, s: x.index_fill(0, m.tensor([0, 2]), s),
    "add": lambda m, x, s: x + s,
    "rsub": lambda m, x, s: s - x,
    "add_": lambda m, x, s: x.clone().add_(s),
    "add_alpha": lambda m, x, s: x.add(x, alpha=s),
    "mul": lambda m, x, s: x * s,
    "div": lambda m, x, s: x / s,
    "clamp": lambda m, x, s: x.clamp(min=s),
    "where": lambda m, x, s: m.where(x > 0, x, s),
    "remainder": lambda m, x, s: x % s,
    "nan_to_num": lambda m, x, s: (x / 0 * 0).nan_to_num(nan=s),
    "threshold": lambda m, x, s: m.nn.functional.threshold(x, 0.0, s),
    "hardtanh": lambda m, x, s: m.nn.functional.hardtanh(x, -abs(s), abs(s)),
}


def _bits(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.view(torch.int16).numpy()
    return torch.from_numpy(np.asarray(t.float().numpy())).to(torch.float16).view(torch.int16)


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("name", list(OPS))
def test_python_float_operand_of_float16_as_torch(spec: str, name: str) -> None:
    op = OPS[name]
    values = _near_halfway(torch.float16, seed=list(OPS).index(name), count=16)
    xs = torch.tensor(np.random.default_rng(3).uniform(-1000, 1000, 6)).to(torch.float16)
    want = np.stack([_bits(op(torch, xs, s)) for s in values])
    with entered(spec):
        x = tw.tensor(xs.float().numpy()).to(tw.float16)
        got = np.stack([np.asarray(_bits(op(tw, x, s))) for s in values])
    np.testing.assert_array_equal(got, want)


def test_float16_fill_of_numpy_backend_goes_through_float32() -> None:
    # the plugin's full (scalar operands, setitem values, fills): 0.12579346 is just below a
    # float16 half-way point; through float32 it is on it and rounds to even, down
    value = 0.12579345703125 - 2.0**-40
    with entered("numpy"):
        got = tw.full((2,), value, dtype=tw.float16)
        assert (tw.zeros(2, dtype=tw.float16) + value).tolist() == got.tolist()
    assert got.tolist() == torch.full((2,), value, dtype=torch.float16).tolist()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("spec", FAST)
def test_number_divided_by_tensor_as_torch(spec: str, dtype: str) -> None:
    # torch's `number / t` is `t.reciprocal() * number`: one division differed in ~25%.
    # exhaustive over float16 (every finite and special value); the same values wider
    every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(torch.float16)
    xs = every.to(getattr(torch, dtype))
    want = (1.7 / xs).double().numpy()
    with entered(spec):
        got = np.asarray((1.7 / tw.tensor(xs.double().numpy()).to(getattr(tw, dtype))).double())
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("spec", FAST)
def test_numpy_scalar_operand_of_float16_as_torch(spec: str) -> None:
    # a NumPy scalar is the Python number it holds (it used to miss the float32 path)
    rng = np.random.default_rng(5)
    xs = torch.tensor(rng.uniform(-1000, 1000, 64)).to(torch.float16)
    scalars = [np.float64(v) for v in rng.uniform(-3, 3, 8)]
    want = np.stack([_bits(xs * s) for s in scalars])
    with entered(spec):
        x = tw.tensor(xs.float().numpy()).to(tw.float16)
        got = np.stack([np.asarray(_bits(x * s)) for s in scalars])
    np.testing.assert_array_equal(got, want)
