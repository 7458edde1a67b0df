"""``parametrizations.orthogonal``: a matrix (or batch of matrices) kept orthogonal, as
``Q = map(X)`` of an unconstrained ``X`` by the matrix exponential, the Cayley map or a
product of Householder reflections (PyTorch's ``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from typing import Optional, TypeVar

import numpy as np

import tensorweaver as tw
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils import parametrize
from tensorweaver.tensor import Tensor

__all__ = ["orthogonal"]

T_module = TypeVar("T_module", bound=Module)

_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    """Whether ``q``'s columns are orthonormal within ``10 n eps`` (PyTorch's check)."""
    n, k = q.shape[-2], q.shape[-1]
    identity = tw.eye(k, dtype=q.dtype, device=q.device)
    eps = 10.0 * n * tw.finfo(q.dtype).eps
    return bool(tw.allclose(q.mH @ q, identity, atol=eps))  # (and allclose's rtol 1e-5)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR decomposition, its columns signed so that R has a positive
    diagonal (so it is unique)."""
    q, r = tw.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_of(q: Tensor) -> Tensor:
    """The ``X`` whose Householder map is ``q``'s orthogonal factor: LAPACK's geqrf
    reflectors below the diagonal, the signs of R's diagonal on it (flipped where geqrf
    did not reflect), as PyTorch. Computed on the host (no gradient flows here)."""
    raw, tau = np.linalg.qr(q.backend.to_host(q.native), mode="raw")  # LAPACK's geqrf, transposed
    reflectors = np.swapaxes(raw, -1, -2).copy()
    diagonal = np.sign(np.diagonal(reflectors, axis1=-2, axis2=-1)).copy()
    diagonal[tau == 0.0] *= -1
    rows = np.arange(diagonal.shape[-1])
    reflectors[..., rows, rows] = diagonal
    return tw.tensor(reflectors, dtype=q.dtype, device=q.device)


class _Orthogonal(Module):
    """``forward(X)`` is orthogonal for any ``X`` of the parametrized shape; with
    ``use_trivialization`` the result is ``base @ map(X)``, ``base`` a buffer set by
    ``right_inverse`` (then assigning an orthogonal matrix stores it there)."""

    base: Optional[Tensor]

    def __init__(self, weight: Tensor, orthogonal_map: str, use_trivialization: bool) -> None:
        super().__init__()
        if weight.dtype.is_complex and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:  # work on a tall matrix
            x = x.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            reflectors = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (reflectors * reflectors).sum(dim=-2))
            q = tw.linalg.householder_product(reflectors, tau)
            # X's diagonal (+-1, not differentiated) signs the columns.
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            x = x.tril()
            if n != k:  # embedded in a square matrix
                zeros = tw.zeros(n, n - k, dtype=x.dtype, device=x.device)
                x = tw.cat([x, zeros.expand(*x.shape[:-2], n, n - k)], dim=-1)
            skew = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = tw.linalg.matrix_exp(skew)
            else:  # Cayley: (I - A/2)^-1 (I + A/2)
                identity = tw.eye(n, dtype=skew.dtype, device=skew.device)
                q = tw.linalg.solve(identity - skew / 2, identity + skew / 2)
            if n != k:
                q = q[..., :k]
        if getattr(self, "base", None) is not None:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        """An ``X`` with ``forward(X) == q`` (``q`` made orthogonal first if it is not)."""
        with tw.no_grad():
            if tuple(q.shape) != tuple(self.shape):
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor "
                    f"of shape {q.shape}."
                )
            q_init = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q = q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False."
                    )
                reflectors = _householder_of(q)
                return reflectors.mT if transposed else reflectors
            if n != k:  # completed to a square orthogonal matrix
                filler = tw.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(tw.cat([q, filler], dim=-1))
            elif not _is_orthogonal(q):
                q = _make_orthogonal(q)
            else:
                q = q.clone()
            self.base = q
            # -I: householder(-I) is I, and every map takes X = -I to I.
            neg_identity = tw.zeros_like(q_init)
            neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_identity


def orthogonal(
    module: T_module,
    name: str = "weight",
    orthogonal_map: Optional[str] = None,
    *,
    use_trivialization: bool = True,
) -> T_module:
    """Parametrize ``module.<name>`` (``(..., n, k)``) as an orthogonal (or unitary) matrix:
    orthonormal columns if ``n >= k``, rows otherwise. ``orthogonal_map`` is
    ``"matrix_exp"`` (default for square or complex), ``"cayley"`` or ``"householder"``
    (default otherwise); the current value is made orthogonal at registration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.dtype.is_complex else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module
