"""``LogisticNormal(loc, scale)``: a Normal draw of K - 1 coordinates mapped onto the
K-simplex by ``StickBreakingTransform``."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions import constraints
from tensorweaver.distributions.normal import Normal
from tensorweaver.distributions.transformed_distribution import TransformedDistribution
from tensorweaver.distributions.transforms import Transform
from tensorweaver.dtype_info import finfo
from tensorweaver.nn.functional import logsigmoid, pad
from tensorweaver.ops.creation import arange
from tensorweaver.tensor import Tensor


def _log_offset(x: Tensor) -> Tensor:
    """log(K - k) for stick k = 0 .. K - 2 along the last dimension (K - 1 long): the shift
    that maps x = 0 to the centre of the simplex."""
    k = x.shape[-1]
    return arange(k, 0, -1, dtype=x.dtype, device=x.device).log()


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length K - 1 onto the K-simplex, breaking off a sigmoid
    fraction of what is left of the stick at each step."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        z = (x - _log_offset(x)).sigmoid()
        left = (1 - z).cumprod(-1)
        return pad(z, (0, 1), value=1.0) * pad(left, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        head = y[..., :-1]
        rest = (1 - head.cumsum(-1)).clamp(min=finfo(y.dtype).tiny)
        return head.log() - rest.log() + _log_offset(head)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shifted = x - _log_offset(x)
        return (-shifted + logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform: too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: tuple) -> tuple:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform: too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StickBreakingTransform)


class LogisticNormal(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> LogisticNormal:
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError("LogisticNormal has no cdf: stick breaking is not monotone")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError("LogisticNormal has no icdf: stick breaking is not monotone")

    # the base is Independent(Normal(loc, scale), 1), as PyTorch's
    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
