"""float64 (and complex128) into float16 / bfloat16, bit for bit as torch 2.13 converts: through
float32, so values near a half-way point are rounded twice (NumPy's astype rounds once). Before
the fix ``tw.tensor(x).half()`` on NumPy, and ``tw.tensor(data, dtype=tw.float16)`` on every
backend, rounded 0.12579346 (just below the float16 half-way point 0.125793457...) up to
0.12585449 where torch gives 0.12573242."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

HALVES = ["float16", "bfloat16"]


def _near_half_way(dtype: str) -> np.ndarray:
    """float64 values at, just above and just below the half-way points between neighbours of
    ``dtype`` (seeded), and a few at its range's edges."""
    rng = np.random.default_rng(16)
    low = torch.tensor(rng.standard_normal(1500) * 4).to(getattr(torch, dtype))
    high = torch.nextafter(low, torch.tensor(float("inf"), dtype=low.dtype))
    mid = (low.double().numpy() + high.double().numpy()) / 2
    tiny = np.abs(mid) * 2.0**-40  # lost by float32, so rounded twice it is a tie
    edges = [65519.99, 65520.0, -65519.99, 6e-8, 2.9802322387695312e-08, 1e-45, 0.0, -0.0]
    return np.concatenate([mid, mid + tiny, mid - tiny, edges])


def _have(dtype: str) -> None:
    if getattr(tw, dtype) not in tw.empty(0).backend.dtypes:
        pytest.skip(f"{tw.empty(0).device} has no {dtype}")


def _bits(t: Any) -> np.ndarray:
    return (t.double() if isinstance(t, torch.Tensor) else t.double()).numpy()


CONVERSIONS: dict[str, Callable[[Any, np.ndarray, str], Any]] = {
    "to": lambda m, x, d: m.tensor(x).to(getattr(m, d)),
    "method": lambda m, x, d: getattr(m.tensor(x), "half" if d == "float16" else d)(),
    "tensor of an array": lambda m, x, d: m.tensor(x, dtype=getattr(m, d)),
    "tensor of a list": lambda m, x, d: m.tensor(x.tolist(), dtype=getattr(m, d)),
    "as_tensor": lambda m, x, d: m.as_tensor(x, dtype=getattr(m, d)),
    "type_as": lambda m, x, d: m.tensor(x).type_as(m.ones(1, dtype=getattr(m, d))),
    "complex": lambda m, x, d: m.tensor(x + 0j).to(getattr(m, d)),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # complex to real
@pytest.mark.parametrize("dtype", HALVES)
@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_double_to_half_rounds_as_torch(backend: str, name: str, dtype: str) -> None:
    _have(dtype)
    x = _near_half_way(dtype)
    want = _bits(CONVERSIONS[name](torch, x, dtype))
    got = CONVERSIONS[name](tw, x, dtype)
    assert got.dtype is getattr(tw, dtype)
    np.testing.assert_array_equal(_bits(got), want)


@pytest.mark.parametrize("dtype", HALVES)
def test_double_scalars_to_half_as_torch(backend: str, dtype: str) -> None:
    _have(dtype)
    for value in _near_half_way(dtype)[::97].tolist():
        want = torch.tensor(value, dtype=getattr(torch, dtype)).item()
        assert tw.tensor(value, dtype=getattr(tw, dtype)).item() == want, value


def test_float32_to_half_unchanged(backend: str) -> None:
    # float32 sources round once, in torch as here
    x = _near_half_way("float16").astype(np.float32)
    want = torch.from_numpy(x).half().double().numpy()
    np.testing.assert_array_equal(tw.tensor(x).half().double().numpy(), want)
