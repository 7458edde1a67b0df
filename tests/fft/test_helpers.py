"""fftfreq, rfftfreq, fftshift and ifftshift against torch.fft: values, dtypes, devices,
odd/even/zero sizes, chosen dims, and gradients through the shifts."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from fft_reference import assert_close, compare, host, values


@pytest.mark.parametrize("n", [0, 1, 4, 7])
@pytest.mark.parametrize("d", [1.0, 0.25])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_like_torch(backend: str, name: str, n: int, d: float) -> None:
    for dtype in [None, "float64"]:
        ours = getattr(tw.fft, name)(n, d, dtype=dtype and getattr(tw, dtype))
        theirs = getattr(torch.fft, name)(n, d, dtype=dtype and getattr(torch, dtype))
        assert ours.device == tw.zeros(1).device
        assert_close(host(ours), host(theirs), dtype or "float32", f"{name}({n}, {d}, {dtype})")


def test_complex_frequencies(backend: str) -> None:
    """PyTorch documents complex dtypes but its CPU arange has none: NumPy is the reference."""
    ours = tw.fft.fftfreq(5, 0.5, dtype=tw.complex128)
    assert ours.dtype is tw.complex128
    np.testing.assert_allclose(ours.numpy(), np.fft.fftfreq(5, 0.5), rtol=1e-15)


def test_frequencies_are_leaves_on_request(backend: str) -> None:
    freq = tw.fft.fftfreq(5, requires_grad=True)
    assert freq.requires_grad and freq.is_leaf


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), [1]])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_like_torch(backend: str, name: str, dim) -> None:
    compare(name, values((3, 4, 5), "float64"), dim=dim)
    compare(name, values((4, 5), "complex64"), dim=None if dim is None else -1)


@pytest.mark.cunumeric
def test_shift_undoes_and_centres(backend: str) -> None:
    x = tw.arange(7)
    assert tw.fft.fftshift(tw.fft.fftfreq(7)).tolist() == sorted(tw.fft.fftfreq(7).tolist())
    assert tw.fft.ifftshift(tw.fft.fftshift(x)).tolist() == x.tolist()
    np.testing.assert_array_equal(tw.fft.fftshift(x).numpy(), np.fft.fftshift(np.arange(7)))
