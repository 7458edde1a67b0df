"""``tw.fft``: PyTorch's ``torch.fft`` namespace, discrete Fourier transforms with
``n``/``s``, ``dim`` and ``norm`` ("backward", "ortho", "forward") as PyTorch takes them.

Real float inputs give complex results of their precision, integer inputs are taken in the
default float dtype first. Three backend primitives (optional, API 2.4: ``fft_c2c``,
``fft_r2c``, ``fft_c2r``) compute every transform, on the host with NumPy where a backend
has no kernel; padding, trimming, conjugation and shifts are tensor ops, and gradients
follow PyTorch's rules (``tensorweaver.autograd.fft_rules``).
"""

from __future__ import annotations

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
