"""``tw.vander``: the Vandermonde matrix of a 1-d tensor (PyTorch's signature, which
differs from ``tw.linalg.vander``'s: ``N`` columns, decreasing powers unless
``increasing``)."""

from __future__ import annotations

from tensorweaver.contract import dtypes
from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Columns ``x**0, x**1, ..., x**(N-1)`` (reversed unless ``increasing``) as running
    products, differentiable; bool and integer ``x`` give int64, as in PyTorch."""
    from tensorweaver.ops.numeric import cumprod

    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor (vander got shape {x.shape}).")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"N must be non-negative (vander got N={n}).")
    if x.dtype.kind in "bui":
        x = x.to(dtypes.int64)
    if n == 0:
        return cr.zeros((x.shape[0], 0), dtype=x.dtype, device=x.device)
    ones = cr.ones((x.shape[0], 1), dtype=x.dtype, device=x.device)
    factors = mv.cat([ones, mv.expand(mv.unsqueeze(x, 1), (x.shape[0], n - 1))], dim=1)
    out = cumprod(factors, 1)
    return out if increasing else mv.flip(out, (1,))
