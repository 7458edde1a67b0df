"""``tw.fft``: PyTorch's ``torch.fft`` namespace, discrete Fourier transforms with
``n``/``s``, ``dim`` and ``norm`` ("backward", "ortho", "forward") as PyTorch takes them.

Real float inputs give complex results of their precision, integer inputs are taken in the
default float dtype first. Three backend primitives (optional, API 2.4: ``fft_c2c``,
``fft_r2c``, ``fft_c2r``) compute every transform, on the host with NumPy where a backend
has no kernel; padding, trimming, conjugation and shifts are tensor ops, and gradients
follow PyTorch's rules (``tensorweaver.autograd.fft_rules``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from tensorweaver.fft.helpers import fftfreq, fftshift, ifftshift, rfftfreq
from tensorweaver.fft.transforms import (
    fft,
    fft2,
    fftn,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftn,
)
from tensorweaver.linalg.out import signed, write_out
from tensorweaver.tensor import Tensor

#: The transforms PyTorch composes of others (ifft: of a real input), whose out= takes
#: inputs that require grad.
_COMPOSITE = {"ihfft": True, "ifft": lambda x: not x.dtype.is_complex}


# PyTorch's out= of the transforms. The wrappers spell out the transforms' parameters: a
# generic (*args, **kwargs) one cost 0.5-1 us a call, 2-4% of a transform of 8 x 1024 points.
def _sized(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn(input, n, dim, norm)`` with ``out=``."""
    composite = _COMPOSITE.get(name, False)

    @functools.wraps(fn)
    def call(
        input: Any, n: Any = None, dim: int = -1, norm: Any = None, *, out: Any = None
    ) -> Tensor:
        value = fn(input, n, dim, norm)
        if out is None:
            return value
        return write_out(f"fft_{name}", value, out, input, composite, True, False)

    return signed(call, fn)


def _shaped(name: str, fn: Callable[..., Tensor], dims: Any) -> Callable[..., Tensor]:
    """``fn(input, s, dim, norm)`` (``dim`` by default ``dims``) with ``out=``."""

    @functools.wraps(fn)
    def call(
        input: Any, s: Any = None, dim: Any = dims, norm: Any = None, *, out: Any = None
    ) -> Tensor:
        value = fn(input, s, dim, norm)
        if out is None:
            return value
        return write_out(f"fft_{name}", value, out, input, False, True, False)

    return signed(call, fn)


globals().update({n: _sized(n, globals()[n]) for n in "fft ifft rfft irfft hfft ihfft".split()})
globals().update(
    {n: _shaped(n, globals()[n], (-2, -1)) for n in "fft2 ifft2 rfft2 irfft2 hfft2 ihfft2".split()}
)
globals().update(
    {n: _shaped(n, globals()[n], None) for n in "fftn ifftn rfftn irfftn hfftn ihfftn".split()}
)

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "hfft2",
    "hfftn",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "ihfft2",
    "ihfftn",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]
