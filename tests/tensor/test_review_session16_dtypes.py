"""Review of the float64 -> half rounding (aadc7d2): PyTorch converts a Python float it fills
a float16 or bfloat16 tensor with to float32 first and then to the half dtype (rounded twice),
where NumPy rounds the double once. Values one double ulp beside a half-way point of float16
are the ones where the two differ; each way of writing a number into a half tensor is
compared bit for bit with torch 2.13.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered


def _near_halfway(seed: int) -> list[float]:
    """Doubles just beside the mid-points of neighbouring float16 values (drawn, seeded)."""
    rng = np.random.default_rng(seed)
    low = torch.tensor(rng.uniform(-60000, 60000, 40)).to(torch.float16)
    high = torch.nextafter(low, torch.tensor(float("inf"), dtype=torch.float16))
    mid = (low.double() + high.double()) / 2
    beside = [np.nextafter(m, m + side) for m in mid.tolist() for side in (-1, 1)]
    return [float(v) for v in beside]


def _bits(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy()).view(np.int16)


def _each(module: Any, values: list[float], fill: Callable[[Any, float], Any]) -> Any:
    return module.cat([fill(module, v).reshape(1) for v in values])


FILLS: dict[str, Callable[[Any, float], Any]] = {
    "full": lambda m, v: m.full((1,), v, dtype=m.float16),
    "full_like": lambda m, v: m.full_like(m.zeros(1, dtype=m.float16), v),
    "new_full": lambda m, v: m.zeros(1, dtype=m.float16).new_full((1,), v),
    "fill_": lambda m, v: m.zeros(1, dtype=m.float16).fill_(v),
}
#: Before session 17 the NumPy backend rounded the double once here (its ``full``, which
#: makes setitem's value and scalar operands, now goes through float32 for float16).
WRITES = {
    "setitem": lambda m, v: _setitem(m.zeros(1, dtype=m.float16), v),
    "masked_fill": lambda m, v: m.zeros(1, dtype=m.float16).masked_fill(m.tensor([True]), v),
    "add_scalar": lambda m, v: m.zeros(1, dtype=m.float16).add(v),
}


def _setitem(t: Any, v: float) -> Any:
    t[0] = v
    return t


def _compare(spec: str, fill: Callable[[Any, float], Any], seed: int) -> None:
    values = _near_halfway(seed)
    want = _each(torch, values, fill)
    with entered(spec, seed=0):
        got = _each(tw, values, fill)
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("name", list(FILLS))
@pytest.mark.parametrize("spec", FAST)
def test_python_float_fill_of_float16_rounds_as_torch(spec: str, name: str) -> None:
    # before: full((1,), v, dtype=float16) on NumPy differed from torch for 40 of 80 values
    _compare(spec, FILLS[name], seed=list(FILLS).index(name))


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("name", list(WRITES))
def test_python_float_written_into_float16_rounds_as_torch(spec: str, name: str) -> None:
    # before (session 17): on NumPy each of these differed from torch for 40 of 80 values
    _compare(spec, WRITES[name], seed=10 + list(WRITES).index(name))
