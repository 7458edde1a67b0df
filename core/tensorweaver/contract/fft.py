"""The scale of the Fourier-transform primitives (API 2.4) in numpy.fft's spelling.

The ``fft_*`` rows of :data:`tensorweaver.contract.ir.OPTIONAL` take ``norm`` as an absolute
scale of the result: ``"none"`` (times 1), ``"by_root_n"`` (1/sqrt(N)) or ``"by_n"`` (1/N).
Libraries that follow numpy.fft (NumPy, CuPy, cuPyNumeric, jax.numpy) name the scaled
direction instead; :func:`numpy_norm` translates, for plugins and the core's host fallback.
"""

from __future__ import annotations

# (IR scale, forward direction) -> numpy.fft's norm ("by_root_n" is "ortho" both ways).
_NUMPY_NORM = {
    ("none", True): "backward",
    ("by_n", True): "forward",
    ("none", False): "forward",
    ("by_n", False): "backward",
}


def numpy_norm(norm: str, forward: bool) -> str:
    """numpy.fft's ``norm=`` for the IR's scale ``norm`` of a forward (or inverse) transform."""
    return "ortho" if norm == "by_root_n" else _NUMPY_NORM[norm, forward]
