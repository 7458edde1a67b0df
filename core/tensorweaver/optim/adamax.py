"""Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.foreach import each
from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import ParamsT, count_steps


class Adamax(MomentEstimates):
    """``torch.optim.Adamax``: ``exp_inf = max(beta2 * exp_inf, |g| + eps)``;
    ``p -= lr / (1 - beta1**t) * exp_avg / exp_inf``.

    ``capturable`` is accepted for PyTorch compatibility and changes nothing here;
    ``foreach=True`` steps in PyTorch's foreach order where that order shows (a gradient
    sharing memory with what the step writes, a parameter listed twice).
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
        # (two writes, as torch's maximum(exp_inf.mul_(beta2), ..., out=exp_inf): its version)
        exp_inf.mul_(beta2)
        exp_inf.copy_(tw.maximum(exp_inf, grad.abs() + group["eps"]))

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state, step, _ = self._moments_step(param, group, decoupled=False)
        beta1 = group["betas"][0]
        param.addcdiv_(state["exp_avg"], state["exp_inf"], value=-group["lr"] / (1 - beta1**step))

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_adamax (without capturable), operation by operation
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group)
        steps = count_steps(states)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        exp_avgs = [state["exp_avg"] for state in states]
        exp_infs = [state["exp_inf"] for state in states]
        each("lerp_", exp_avgs, grads, 1 - beta1)
        each("mul_", exp_infs, beta2)
        grads = each("abs", grads)
        each("add_", grads, group["eps"])
        each("copy_", exp_infs, each("maximum", exp_infs, grads))
        step_sizes = [-lr / (1 - beta1**step) for step in steps]
        each("addcdiv_", params, exp_avgs, exp_infs, value=step_sizes)
