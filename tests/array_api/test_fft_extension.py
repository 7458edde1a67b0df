"""The standard's ``fft`` extension (``xp.fft``) against ``numpy.fft``, with the standard's
keywords, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw

RNG = np.random.default_rng(0)
SIGNAL = RNG.standard_normal((3, 8)) + 1j * RNG.standard_normal((3, 8))
REAL = RNG.standard_normal((4, 6))


def _xp(x: tw.Tensor):
    return x.__array_namespace__().fft


@pytest.mark.cunumeric
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_one_axis_transforms_match_numpy(backend: str, norm: str) -> None:
    z, r = tw.tensor(SIGNAL), tw.tensor(REAL)
    fft = _xp(z)
    pairs = [
        (fft.fft(z, n=10, axis=0, norm=norm), np.fft.fft(SIGNAL, n=10, axis=0, norm=norm)),
        (fft.ifft(z, norm=norm), np.fft.ifft(SIGNAL, norm=norm)),
        (fft.rfft(r, axis=-1, norm=norm), np.fft.rfft(REAL, axis=-1, norm=norm)),
        (fft.irfft(z, n=9, norm=norm), np.fft.irfft(SIGNAL, n=9, norm=norm)),
        (fft.hfft(z, norm=norm), np.fft.hfft(SIGNAL, norm=norm)),
        (fft.ihfft(r, norm=norm), np.fft.ihfft(REAL, norm=norm)),
    ]
    for ours, theirs in pairs:  # (ihfft's result is a conjugate view, as torch's)
        np.testing.assert_allclose(np.asarray(ours.resolve_conj()), theirs, rtol=1e-10, atol=1e-12)


def test_many_axes_transforms_and_helpers_match_numpy(backend: str) -> None:
    z, r = tw.tensor(SIGNAL), tw.tensor(REAL)
    fft = _xp(z)
    pairs = [
        (fft.fftn(z, s=(4, 8), axes=(0, 1)), np.fft.fftn(SIGNAL, s=(4, 8), axes=(0, 1))),
        (fft.ifftn(z, axes=[1]), np.fft.ifftn(SIGNAL, axes=[1])),
        (fft.rfftn(r), np.fft.rfftn(REAL)),
        (fft.irfftn(z, s=(3, 8), axes=(0, 1)), np.fft.irfftn(SIGNAL, s=(3, 8), axes=(0, 1))),
        (fft.fftfreq(7, d=0.5), np.fft.fftfreq(7, d=0.5)),
        (fft.rfftfreq(8, d=2.0), np.fft.rfftfreq(8, d=2.0)),
        (fft.fftshift(r, axes=(1,)), np.fft.fftshift(REAL, axes=(1,))),
        (fft.ifftshift(r), np.fft.ifftshift(REAL)),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-10, atol=1e-12)
