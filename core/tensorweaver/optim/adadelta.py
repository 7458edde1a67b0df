"""Adadelta: step sizes from running averages of squared gradients and squared updates."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.foreach import each
from tensorweaver.optim.optimizer import (
    Optimizer,
    ParamsT,
    count_step,
    count_steps,
    scalar_tensor,
)


class Adadelta(Optimizer):
    """``torch.optim.Adadelta``: ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g``.

    ``capturable`` is accepted for PyTorch compatibility and changes nothing here;
    ``foreach=True`` steps in PyTorch's foreach order where that order shows (a gradient
    sharing memory with what the step writes, a parameter listed twice).
    """

    _sparse_refusal = "Adadelta does not support sparse gradients"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: Optional[bool] = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        rho = group["rho"]
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: Invalid rho value: {rho} (rho must be in [0, 1])")

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {
            "step": scalar_tensor(0.0),
            "square_avg": tw.zeros_like(param),
            "acc_delta": tw.zeros_like(param),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        count_step(state)
        rho, eps = group["rho"], group["eps"]
        grad = self._grad(param, group)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
        delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
        acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        param.add_(delta, alpha=-group["lr"])

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_adadelta, operation by operation
        states = [self._state_of(p, group) for p in params]
        count_steps(states)
        grads = self._foreach_grads(params, group)
        rho, eps = group["rho"], group["eps"]
        square_avgs = [state["square_avg"] for state in states]
        acc_deltas = [state["acc_delta"] for state in states]
        each("mul_", square_avgs, rho)
        each("addcmul_", square_avgs, grads, grads, value=1 - rho)
        std = each("add", square_avgs, eps)
        each("sqrt_", std)
        deltas = each("add", acc_deltas, eps)
        each("sqrt_", deltas)
        each("div_", deltas, std)
        each("mul_", deltas, grads)
        each("mul_", acc_deltas, rho)
        each("addcmul_", acc_deltas, deltas, deltas, value=1 - rho)
        each("add_", params, deltas, alpha=-group["lr"])
