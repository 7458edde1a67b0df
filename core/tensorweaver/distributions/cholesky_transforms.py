"""``LowerCholeskyTransform``, ``PositiveDefiniteTransform`` and ``CorrCholeskyTransform``:
unconstrained square matrices onto Cholesky factors (strict lower triangle kept, diagonal
exponentiated) and onto positive-definite matrices (``L L^T`` of that factor); unconstrained
vectors onto Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

import numpy as np

from tensorweaver import linalg
from tensorweaver.contract.dtypes import int64
from tensorweaver.distributions import constraints
from tensorweaver.distributions.transforms import Transform
from tensorweaver.dtype_info import finfo
from tensorweaver.nn.functional import pad, softplus
from tensorweaver.ops.creation import as_tensor, eye
from tensorweaver.tensor import Tensor

_SQUARE = constraints.independent(constraints.real, 2)


class LowerCholeskyTransform(Transform):
    bijective = False  # only the lower triangle of x reaches y (PyTorch's flag)
    domain = _SQUARE
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LowerCholeskyTransform)


class PositiveDefiniteTransform(Transform):
    bijective = False  # as LowerCholeskyTransform, which it composes
    domain = _SQUARE
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(linalg.cholesky(y))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositiveDefiniteTransform)


def _tril_positions(n: int, diag: int, like: Tensor) -> Tensor:
    """Flat (row-major) positions of the entries of an n x n matrix on or below diagonal
    ``diag``, in row order."""
    rows, cols = np.nonzero(np.tril(np.ones((n, n), dtype=bool), diag))
    return as_tensor(rows * n + cols, dtype=int64, device=like.device)


def _tril_to_vec(matrix: Tensor, diag: int) -> Tensor:
    n = matrix.shape[-1]
    flat = matrix.reshape(matrix.shape[:-2] + (n * n,))
    return flat.index_select(-1, _tril_positions(n, diag, matrix))


def _vec_to_tril(vec: Tensor, n: int, diag: int) -> Tensor:
    """The lower-triangular matrix (below diagonal ``diag``) holding ``vec`` in row order,
    written as a product with a 0/1 placement matrix so that gradients follow."""
    positions = np.asarray(_tril_positions(n, diag, vec))
    placement = np.zeros((positions.size, n * n))
    placement[np.arange(positions.size), positions] = 1.0
    flat = vec @ as_tensor(placement, dtype=vec.dtype, device=vec.device)
    return flat.reshape(vec.shape[:-1] + (n, n))


def _side(n_vec: int) -> int:
    side = round((0.25 + 2 * n_vec) ** 0.5 + 0.5)
    if side * (side - 1) // 2 != n_vec:
        raise ValueError("Input is not a flattened lower-diagonal number")
    return side


class CorrCholeskyTransform(Transform):
    """Unconstrained vectors of length D (D - 1) / 2 onto Cholesky factors of D x D
    correlation matrices: tanh into (-1, 1), then stick breaking along each row so that
    rows have unit length (Stan's construction)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky

    def _call(self, x: Tensor) -> Tensor:
        eps = finfo(x.dtype).eps
        t = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        n = _side(x.shape[-1])
        r = _vec_to_tril(t, n, -1)
        left = (1 - r.pow(2)).sqrt().cumprod(-1)
        r = r + eye(n, dtype=r.dtype, device=r.device)
        return r * pad(left[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        left = 1 - (y * y).cumsum(-1)
        shifted = pad(left[..., :-1], (1, 0), value=1.0)
        t = _tril_to_vec(y, -1) / _tril_to_vec(shifted, -1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # of x and the strictly lower triangle of y (the spaces differ in dimension)
        left = _tril_to_vec(1 - (y * y).cumsum(-1), -2)
        stick_breaking = 0.5 * left.log().sum(-1)
        tanh = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        side = _side(shape[-1])
        return tuple(shape[:-1]) + (side, side)

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        return tuple(shape[:-2]) + (shape[-1] * (shape[-1] - 1) // 2,)
