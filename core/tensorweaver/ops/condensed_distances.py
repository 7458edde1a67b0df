"""``tw.pdist``: the p-norm distances between every pair of rows of a matrix, in the order
of the upper triangle (row i with each later row j), differentiable."""

from __future__ import annotations

from tensorweaver.ops import creation as cr
from tensorweaver.ops.structure import triu_indices
from tensorweaver.tensor import Tensor


def pdist(input: Tensor, p: float = 2) -> Tensor:
    from tensorweaver.linalg.norms import vector_norm

    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"pdist only supports floating-point dtypes (got {input.dtype.name}); call "
            ".float() first"
        )
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values (got p={p})")
    n = input.shape[0]
    if n < 2:
        return cr.zeros(0, dtype=input.dtype, device=input.device)
    rows, later = triu_indices(n, n, 1, device=input.device)
    return vector_norm(input[rows] - input[later], p, dim=1)
