"""Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import ParamsT


class Adamax(MomentEstimates):
    """``torch.optim.Adamax``: ``exp_inf = max(beta2 * exp_inf, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * exp_avg / exp_inf``.

    ``foreach`` and ``capturable`` are accepted for PyTorch compatibility and change
    nothing here.
    """

    _tensor_options = ("lr", "betas")  # (its step computes with them as PyTorch's)
    _sparse_refusal = "Adamax does not support sparse gradients"
    _moments = ("exp_avg", "exp_inf")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: Optional[bool] = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )

    def _second_moment(
        self, state: dict[str, Any], grad: Any, beta2: Any, group: dict[str, Any]
    ) -> None:
        exp_inf = state["exp_inf"]
        exp_inf.copy_(tw.maximum(exp_inf * beta2, grad.abs() + group["eps"]))

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state, step, _ = self._moments_step(param, group, decoupled=False)
        beta1 = group["betas"][0]
        param.addcdiv_(state["exp_avg"], state["exp_inf"], value=-group["lr"] / (1 - beta1**step))
