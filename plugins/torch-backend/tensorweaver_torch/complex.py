"""Complex numbers (API 2.4): the parts of a complex tensor, and one made from its parts."""

from __future__ import annotations

import torch

Tensor = torch.Tensor


class ComplexNumbers:
    """The primitives a backend listing complex64/complex128 in its ``dtypes`` provides."""

    def real(self, a: Tensor) -> Tensor:
        return torch.real(a).clone()  # torch.real is a view; the IR's results own their memory

    def imag(self, a: Tensor) -> Tensor:
        return torch.imag(a).clone()

    def conj(self, a: Tensor) -> Tensor:
        return torch.conj_physical(a)  # torch.conj is a lazy view with a conjugate bit

    def complex(self, re: Tensor, im: Tensor) -> Tensor:
        return torch.complex(re, im)
