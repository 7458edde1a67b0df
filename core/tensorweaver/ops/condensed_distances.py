"""``tw.pdist``: the p-norm distances between every pair of rows of a matrix, in the order
of the upper triangle (row i with each later row j), differentiable with PyTorch's
``PdistBackward``: for p = inf every coordinate that ties for the largest difference gets
the whole gradient (a norm's gradient shares it out), and p = 0 is in the graph with a zero
gradient."""

from __future__ import annotations

import math

from tensorweaver.ops import coordinates as co
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.structure import triu_indices
from tensorweaver.tensor import Tensor


def _largest(diff: Tensor) -> Tensor:
    """The inf-norm of each row of ``diff``, whose gradient is ``sign(diff)`` at every
    finite coordinate that ties for the largest ``|diff|``."""
    size = ew.abs(diff)
    top = rd.amax(size.detach(), 1, keepdim=True)
    ties = (size.detach() == top).to(diff.dtype)
    finite = co.where(ew.isfinite(size.detach()), size, 0.0)  # (inf - inf would be NaN)
    return top.squeeze(1) + rd.sum((finite - finite.detach()) * ties, 1)


def _count(diff: Tensor) -> Tensor:
    """The number of non-zero coordinates of each row of ``diff`` (NaN where one is NaN), in
    the graph with a zero gradient."""
    count = rd.sum((diff.detach() != 0).to(diff.dtype), 1)
    return count + rd.sum(co.where(ew.isinf(diff.detach()), 0.0, diff) * 0.0, 1)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"pdist only supports floating-point dtypes (got {input.dtype.name}); call "
            ".float() first"
        )
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values (got p={p})")
    return labelled(_distances(input, p), "PdistBackward0", input)


def _distances(input: Tensor, p: float) -> Tensor:
    """The p-norm of each difference of a row with a later row (upper-triangle order)."""
    from tensorweaver.linalg.norms import vector_norm

    n = input.shape[0]
    if n < 2:  # no pairs: empty, in the graph as PyTorch's (a backward through it works)
        return input.reshape(-1)[:0]
    rows, later = triu_indices(n, n, 1, device=input.device)
    diff = input[rows] - input[later]
    if p == 0:
        return _count(diff)
    if math.isinf(p):
        return _largest(diff)
    return vector_norm(diff, p, dim=1)
