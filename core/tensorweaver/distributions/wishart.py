"""``Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None)``: random
positive-definite matrices, drawn by the Bartlett decomposition (chi-squared diagonal and
normal lower triangle), reparameterized through both."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from tensorweaver import linalg
from tensorweaver.distributions import constraints
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.distributions.exponential_family import ExponentialFamily
from tensorweaver.distributions.gamma import Chi2
from tensorweaver.distributions.multivariate_normal import _precision_to_scale_tril
from tensorweaver.distributions.params import lazy_property
from tensorweaver.dtype_info import finfo
from tensorweaver.linalg.solvers import cholesky_solve
from tensorweaver.ops.creation import arange, eye, randn, tensor
from tensorweaver.ops.special import digamma, multigammaln
from tensorweaver.ops.spellings import broadcast_shapes
from tensorweaver.tensor import Size, Tensor

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function: sum of digamma(x - i / 2) for i < p."""
    halves = arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(ExponentialFamily):
    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self) -> dict:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Any,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        param = given[0]
        if param.ndim < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, numbers.Number):
            batch_shape = Size(param.shape[:-2])
            self.df = tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        square = batch_shape + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(square)
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(square)
        else:
            self.precision_matrix = param.expand(square)
        if bool((self.df < p).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        elif precision_matrix is not None:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2()

    def _chi2(self) -> Chi2:
        """The squared diagonal of the Bartlett factor: chi-squared with df - i degrees."""
        p = self.event_shape[-1]
        steps = arange(p, dtype=self.df.dtype, device=self.df.device)
        return Chi2(self.df.unsqueeze(-1) - steps.expand(self.batch_shape + (-1,)))

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Wishart:
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        square = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(square)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(square)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        new._dist_chi2 = new._chi2()
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self.batch_shape + self.event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        return (lower @ lower.mT).expand(self.batch_shape + self.event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        lower = self._unbroadcasted_scale_tril
        identity = eye(self.event_shape[-1], dtype=lower.dtype, device=lower.device)
        inverse = linalg.solve_triangular(lower, identity.expand(lower.shape), upper=False)
        return (inverse.mT @ inverse).expand(self.batch_shape + self.event_shape)

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(self.batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = factor.masked_fill(factor <= 0, float("nan"))
        return factor.reshape(self.batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett(self, sample_shape: Size) -> Tensor:
        p = self.event_shape[-1]
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt()
        diagonal = diagonal.clamp(min=finfo(diagonal.dtype).eps)
        lower = self._unbroadcasted_scale_tril
        shape = sample_shape + self.batch_shape + (p, p)
        noise = randn(shape, dtype=lower.dtype, device=lower.device).tril(-1)
        factor = lower @ (noise + diagonal.diag_embed(dim1=-2, dim2=-1))
        return factor @ factor.mT

    def rsample(
        self, sample_shape: tuple = Size(), max_try_correction: int | None = None
    ) -> Tensor:
        """Draws; singular ones (possible for df < ndim) are drawn again up to
        ``max_try_correction`` times (10 by default)."""
        tries = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(tuple(sample_shape))
        sample = self._bartlett(sample_shape)
        singular = ~self.support.check(sample)
        for _ in range(tries):
            if not bool(singular.any()):
                break
            warnings.warn("Singular sample detected.", stacklevel=2)
            fresh = self._bartlett(sample_shape)
            sample = fresh.where(singular.unsqueeze(-1).unsqueeze(-1), sample)
            singular = ~self.support.check(sample)
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self.event_shape[-1]
        lower = self._unbroadcasted_scale_tril
        half_log_det = lower.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = cholesky_solve(value, lower).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            -nu * (p * _LOG_2 / 2 + half_log_det)
            - multigammaln(nu / 2, p)
            + (nu - p - 1) / 2 * linalg.slogdet(value).logabsdet
            - trace / 2
        )

    def entropy(self) -> Tensor:
        nu = self.df
        p = self.event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (
            (p + 1) * (p * _LOG_2 / 2 + half_log_det)
            + multigammaln(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        p = self.event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    @property
    def _mean_carrier_measure(self) -> float:
        return 0.0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self.event_shape[-1]
        half = y + (p + 1) / 2
        return half * (-linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) + multigammaln(half, p)
