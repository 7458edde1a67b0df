"""Adagrad: per-coordinate step sizes from the sum of all squared gradients."""

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


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``; the step size decays as ``lr / (1 + (step - 1) * lr_decay)``.

    As in PyTorch, the state of the constructor's parameters is created at once, so
    ``state_dict()`` lists them before the first step.
    """

    _tensor_options = ("lr",)  # (its step computes with them as PyTorch's)
    _sparse_decay_refusal = "Adagrad: weight_decay option is not compatible with sparse gradients"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: Optional[bool] = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: Optional[bool] = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._state_of(p, group)

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        value = group["initial_accumulator_value"]
        if param.dtype.is_complex:  # both parts of a complex parameter start at the value
            value = complex(value, value)
        return {"step": scalar_tensor(0.0), "sum": tw.full_like(param, value)}

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = count_step(state)
        grad = self._grad(param, group)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"].addcmul_(grad, grad, value=1)
        param.addcdiv_(grad, state_sum.sqrt() + group["eps"], value=-clr)

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_adagrad, operation by operation; with a sparse gradient
        # its single-tensor loop, one parameter after another
        if any(p.grad.is_sparse for p in params):
            self._step_group(params, group)
            return
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group)
        lr, lr_decay = group["lr"], group["lr_decay"]
        minus_clr = [-lr / (1 + (step - 1) * lr_decay) for step in count_steps(states)]
        sums = [state["sum"] for state in states]
        each("addcmul_", sums, grads, grads, value=1)
        std = each("sqrt", sums)
        each("add_", std, group["eps"])
        numerator = each("mul", grads, minus_clr)
        each("addcdiv_", params, numerator, std)
