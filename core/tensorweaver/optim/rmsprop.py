"""RMSprop: divide the gradient by a running root mean square of recent gradients."""

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


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``; ``centered`` normalises by an estimate of the variance."""

    _sparse_refusal = "RMSprop does not support sparse gradients"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _non_negative(self) -> dict[str, str]:
        return {**super()._non_negative(), "alpha": "Invalid alpha value"}

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = {"step": scalar_tensor(0.0), "square_avg": tw.zeros_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = tw.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = tw.zeros_like(param)
        return state

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        count_step(state)
        grad = self._grad(param, group)
        alpha = group["alpha"]

        square_avg = state["square_avg"].mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt()
        else:
            avg = square_avg.sqrt()
        avg = avg + group["eps"]

        if group["momentum"] > 0:
            buf = state["momentum_buffer"].mul_(group["momentum"]).addcdiv_(grad, avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.addcdiv_(grad, avg, value=-group["lr"])

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_rmsprop, operation by operation
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group)
        count_steps(states)
        alpha, lr, momentum = group["alpha"], group["lr"], group["momentum"]
        square_avgs = [state["square_avg"] for state in states]
        each("mul_", square_avgs, alpha)
        each("addcmul_", square_avgs, grads, grads, value=1 - alpha)
        if group["centered"]:
            grad_avgs = [state["grad_avg"] for state in states]
            each("lerp_", grad_avgs, grads, 1 - alpha)
            avg = each("addcmul", square_avgs, grad_avgs, grad_avgs, value=-1)
            each("sqrt_", avg)
        else:
            avg = each("sqrt", square_avgs)
        each("add_", avg, group["eps"])
        if momentum > 0:
            bufs = [state["momentum_buffer"] for state in states]
            each("mul_", bufs, momentum)
            each("addcdiv_", bufs, grads, avg)
            each("add_", params, bufs, alpha=-lr)
        else:
            each("addcdiv_", params, grads, avg, value=-lr)
