"""``MultivariateNormal`` (a full covariance, precision or Cholesky factor) and
``LowRankMultivariateNormal`` (covariance ``W @ W.T + diag(D)``, by the Woodbury identity)."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver import linalg
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.params import lazy_property
from tensorweaver.ops.creation import eye, randn
from tensorweaver.ops.spellings import broadcast_shapes
from tensorweaver.tensor import Size, Tensor


def _solve_lower(lower: Tensor, rhs: Tensor) -> Tensor:
    return linalg.solve_triangular(lower, rhs, upper=False)


def batch_mahalanobis(lower: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` over the last dimension, batched."""
    lower, column = lower, x.unsqueeze(-1)
    batch = broadcast_shapes(lower.shape[:-2], column.shape[:-2])
    lower = lower.expand(batch + lower.shape[-2:])
    column = column.expand(batch + column.shape[-2:])
    return _solve_lower(lower, column).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    # With P = L_P L_P^T (lower), the covariance's lower factor is the inverse of the
    # flipped upper factor: flip, factor, flip back and invert the triangle.
    flipped = linalg.cholesky(precision.flip((-2, -1))).flip((-2, -1))
    lower_inverse = flipped.mT
    identity = eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return linalg.solve_triangular(lower_inverse, identity.expand(precision.shape), upper=False)


class MultivariateNormal(Distribution):
    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        matrix = given[0]
        if matrix.ndim < 2:
            raise ValueError(
                "scale_tril, covariance_matrix or precision_matrix must be at least "
                "two-dimensional, with optional leading batch dimensions"
            )
        batch_shape = broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        event_shape = loc.shape[-1:]
        square = batch_shape + event_shape + event_shape
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(square)
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(square)
        else:
            self.precision_matrix = precision_matrix.expand(square)
        self.loc = loc.expand(batch_shape + event_shape)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        elif precision_matrix is not None:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> MultivariateNormal:
        names = ("loc", "covariance_matrix", "precision_matrix", "scale_tril")
        new = self._expanded(MultivariateNormal, batch_shape, _instance, *names)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(
            self._batch_shape + self._event_shape + self._event_shape
        )

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        identity = eye(lower.shape[-1], dtype=lower.dtype, device=lower.device)
        lower_inverse = _solve_lower(lower, identity.expand(lower.shape))
        return (lower_inverse.mT @ lower_inverse).expand(
            self._batch_shape + self._event_shape + self._event_shape
        )

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return (
            self._unbroadcasted_scale_tril.pow(2)
            .sum(-1)
            .expand(self._batch_shape + self._event_shape)
        )

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if not self._batch_shape else h.expand(self._batch_shape)


class LowRankMultivariateNormal(Distribution):
    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        cov_factor: Tensor,
        cov_diag: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.ndim < 2:
            raise ValueError(
                "cov_factor must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(
                f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m"
            )
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        batch_shape = broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        self.loc = loc.expand(batch_shape + event_shape)
        self.cov_factor = cov_factor.expand(batch_shape + cov_factor.shape[-2:])
        self.cov_diag = cov_diag.expand(batch_shape + event_shape)
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = self._capacitance(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @staticmethod
    def _capacitance(w: Tensor, d: Tensor) -> Tensor:
        """Cholesky factor of ``I + W^T D^-1 W``."""
        wt_dinv = w.mT / d.unsqueeze(-2)
        k = w.shape[-1]
        identity = eye(k, dtype=w.dtype, device=w.device)
        return linalg.cholesky(identity + wt_dinv @ w)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LowRankMultivariateNormal:
        new = self._expanded(
            LowRankMultivariateNormal, batch_shape, _instance, "loc", "cov_factor", "cov_diag"
        )
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return new

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        cov = w @ w.mT + d.diag_embed()
        return cov.expand(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        # Woodbury: D^-1 - (C^-1 W^T D^-1)^T (C^-1 W^T D^-1), C the capacitance's factor.
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_dinv = w.mT / d.unsqueeze(-2)
        c = self._capacitance_tril
        batch = broadcast_shapes(c.shape[:-2], wt_dinv.shape[:-2])
        a = _solve_lower(c.expand(batch + c.shape[-2:]), wt_dinv.expand(batch + wt_dinv.shape[-2:]))
        precision = d.reciprocal().diag_embed() - a.mT @ a
        return precision.expand(self._batch_shape + self._event_shape + self._event_shape)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_w = randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        w = self._unbroadcasted_cov_factor
        return (
            self.loc
            + (w @ eps_w.unsqueeze(-1)).squeeze(-1)
            + self._unbroadcasted_cov_diag.sqrt() * eps_d
        )

    def _log_det(self) -> Tensor:
        c = self._capacitance_tril
        return 2 * c.diagonal(dim1=-2, dim2=-1).log().sum(-1) + (
            self._unbroadcasted_cov_diag.log().sum(-1)
        )

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        scaled = (diff / d).unsqueeze(-1)  # D^-1 x
        first = (diff.pow(2) / d).sum(-1)
        wt_scaled = w.mT @ scaled
        batch = broadcast_shapes(self._capacitance_tril.shape[:-2], wt_scaled.shape[:-2])
        c = self._capacitance_tril.expand(batch + self._capacitance_tril.shape[-2:])
        second = _solve_lower(c, wt_scaled.expand(batch + wt_scaled.shape[-2:])).pow(2)
        mahalanobis = first - second.squeeze(-1).sum(-1)
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + mahalanobis + self._log_det())

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        h = 0.5 * (k * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h if not self._batch_shape else h.expand(self._batch_shape)
