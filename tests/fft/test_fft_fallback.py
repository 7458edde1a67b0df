"""A backend without the fft primitives still runs tw.fft: the core computes each with
numpy.fft on the host, warns once per primitive with HostFallbackWarning (not for NumPy's
own arrays, which need no copy), keeps the input's precision and gives torch's values and
gradients."""

from __future__ import annotations

import warnings

import pytest
import tensorweaver as tw
from fft_reference import compare, values
from tensorweaver.ops import host_fallback
from tensorweaver.ops.host_fallback import HostFallbackWarning

PRIMITIVES = ["fft_c2c", "fft_r2c", "fft_c2r"]


@pytest.fixture
def without_kernels(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The current backend with the fft primitives hidden, its warnings not yet given."""
    native = tw.zeros(1).backend
    for name in PRIMITIVES:
        monkeypatch.setattr(native, name, None, raising=False)
    monkeypatch.setattr(host_fallback, "_warned", set())


def test_fallback_warns_once_per_primitive(backend: str, without_kernels: None) -> None:
    x = tw.tensor(values((2, 6), "complex64"))
    if backend == "numpy":  # its arrays are host arrays already: no copy to warn about
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tw.fft.fft(x)
        return
    with pytest.warns(HostFallbackWarning) as caught:
        tw.fft.fft(x)
        tw.fft.ifft2(x)
        tw.fft.irfft(x)
        tw.fft.rfft(x.real)
    warned = sorted(name for name in PRIMITIVES for w in caught if f"{name}:" in str(w.message))
    assert warned == sorted(PRIMITIVES)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tw.fft.hfft(x)  # no second warning


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_fallback_matches_torch(backend: str, without_kernels: None, dtype: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostFallbackWarning)
        for name in ["fft", "ifft", "irfft", "hfft", "fft2", "irfftn"]:
            compare(name, values((3, 5), dtype), norm="ortho")
        real = dtype.replace("complex128", "float64")
        for name in ["rfft", "ihfft", "rfftn"]:
            compare(name, values((3, 5), real), norm="forward")
