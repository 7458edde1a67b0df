"""``ExponentialFamily``: distributions with density ``h(x) exp(<theta, t(x)> - F(theta))``.

A subclass gives its natural parameters ``theta``, its log normalizer ``F`` and the expected
log carrier measure ``E[log h(X)]``; the entropy then follows as a Bregman divergence of
``F`` (``F(theta) - <theta, grad F(theta)> - E[log h]``), and so does the KL divergence
between two members of one family (registered in :mod:`~tensorweaver.distributions.kl`).
"""

from __future__ import annotations

from typing import Any

from tensorweaver.autograd.engine import grad
from tensorweaver.autograd.mode import enable_grad
from tensorweaver.distributions.distribution import Distribution
from tensorweaver.tensor import Tensor


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError(f"{type(self).__name__} does not give its natural parameters")

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} does not give its log normalizer")

    @property
    def _mean_carrier_measure(self) -> Any:
        raise NotImplementedError(
            f"{type(self).__name__} does not give its expected carrier measure"
        )

    def _log_normalizer_and_gradients(self) -> tuple[list[Tensor], Tensor, tuple]:
        """Detached natural parameters, F at them and grad F (a graph, for higher orders)."""
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with enable_grad():
            value = self._log_normalizer(*params)
            gradients = grad(value.sum(), params, create_graph=True)
        return params, value, gradients

    def entropy(self) -> Tensor:
        params, value, gradients = self._log_normalizer_and_gradients()
        result = value - self._mean_carrier_measure
        for param, gradient in zip(params, gradients):
            result = result - (param * gradient).reshape(self.batch_shape + (-1,)).sum(-1)
        return result
