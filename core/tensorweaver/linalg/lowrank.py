"""``tw.svd_lowrank`` and ``tw.pca_lowrank``: a rank-``q`` SVD by randomized range finding
(Halko, Martinsson and Tropp): an orthonormal basis of A's range from A times a Gaussian
matrix, sharpened by ``niter`` power iterations, then the SVD of A projected on it.
Random, as PyTorch's: the factors differ from run to run, their product does not where A
has rank at most ``q``."""

from __future__ import annotations

from tensorweaver.linalg._shared import mH, mH_view
from tensorweaver.linalg.eigen import svd
from tensorweaver.linalg.factorizations import qr
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor


def _basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:  # noqa: N803
    """Q with q orthonormal columns spanning about the range of A - M."""

    def times(X: Tensor, adjoint: bool = False) -> Tensor:
        out = matmul(mH(A) if adjoint else A, X)
        return out if M is None else ew.sub(out, matmul(mH(M) if adjoint else M, X))

    R = cr.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)  # noqa: N806
    Q = qr(times(R)).Q  # noqa: N806
    for _ in range(niter):
        Q = qr(times(qr(times(Q, adjoint=True)).Q)).Q  # noqa: N806
    return Q


def svd_lowrank(
    A: Tensor,  # noqa: N803
    q: int | None = 6,
    niter: int | None = 2,
    M: Tensor | None = None,  # noqa: N803
) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, V) with A - M ~= U diag(S) V^H, U (*, m, q), S (*, q), V (*, n, q)."""
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    if M is not None:
        M = mv.expand(M, A.shape)  # noqa: N806
    if m < n or n > q:  # the basis of A^H's range: q columns of n
        Mt = None if M is None else mH(M)  # noqa: N806
        Q = _basis(mH(A), q, niter, Mt)  # noqa: N806
        B = matmul(A, Q)  # noqa: N806
        B = B if M is None else ew.sub(B, matmul(M, Q))  # noqa: N806
        U, S, Vh = svd(B, full_matrices=False)  # noqa: N806
        return U, S, matmul(Q, mH(Vh))
    Q = _basis(A, q, niter, M)  # noqa: N806
    B = matmul(mH(Q), A)  # noqa: N806
    B = B if M is None else ew.sub(B, matmul(mH(Q), M))  # noqa: N806
    U, S, Vh = svd(B, full_matrices=False)  # noqa: N806
    return matmul(Q, U), S, mH_view(Vh)


def pca_lowrank(
    A: Tensor,  # noqa: N803
    q: int | None = None,
    center: bool = True,
    niter: int = 2,
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`svd_lowrank` of A less its column means (``center``), rank ``q`` (at most
    min(6, m, n) by default)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = ew.sub(A, rd.mean(A, -2, keepdim=True))  # noqa: N806
    return svd_lowrank(A, q, niter=niter)
