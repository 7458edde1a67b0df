"""Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT, count_step, scalar_tensor


class Adamax(Optimizer):
    """``torch.optim.Adamax``: ``exp_inf = max(beta2 * exp_inf, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * exp_avg / exp_inf``.

    ``foreach`` and ``capturable`` are accepted for PyTorch compatibility and change
    nothing here.
    """

    _sparse_refusal = "Adamax does not support sparse gradients"

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
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {
            "step": scalar_tensor(0.0),
            "exp_avg": tw.zeros_like(param),
            "exp_inf": tw.zeros_like(param),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = count_step(state)
        beta1, beta2 = group["betas"]
        grad = self._grad(param, group)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_inf.copy_(tw.maximum(exp_inf * beta2, grad.abs() + group["eps"]))
        param.addcdiv_(exp_avg, exp_inf, value=-group["lr"] / (1 - beta1**step))
