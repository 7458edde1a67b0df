"""Complex numbers (API 2.4): the parts of a complex array, and one made from its parts."""

from __future__ import annotations

import numpy as np

A = np.ndarray


class ComplexNumbers:
    """The primitives a backend listing complex64/complex128 in its ``dtypes`` provides."""

    def real(self, a: A) -> A:
        return np.real(a).copy()  # np.real is a view; the IR's results own their memory

    def imag(self, a: A) -> A:
        return np.imag(a).copy()

    def conj(self, a: A) -> A:
        return np.conjugate(a)

    def complex(self, re: A, im: A) -> A:
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), np.result_type(re, 1j))
        out.real = re
        out.imag = im  # re + 1j * im would turn (inf, 0) into (inf, nan)
        return out
