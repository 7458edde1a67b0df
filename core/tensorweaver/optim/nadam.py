"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.optimizer import (
    Optimizer,
    ParamsT,
    count_step,
    read_scalar,
    scalar_state,
    scalar_tensor,
    write_scalar,
)


class NAdam(Optimizer):
    """``torch.optim.NAdam``; ``decoupled_weight_decay=True`` gives NAdamW."""

    _sparse_refusal = "NAdam does not support sparse gradients"

    _scalar_state = ("step", "mu_product")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {
            "step": scalar_tensor(0.0),
            "mu_product": scalar_tensor(1.0),
            "exp_avg": tw.zeros_like(param),
            "exp_avg_sq": tw.zeros_like(param),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = count_step(state)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        grad = self._grad(param, group, decoupled=group["decoupled_weight_decay"])

        # The momentum coefficients of this step and the next one.
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        entry = state["mu_product"]
        mu_product = scalar_state(read_scalar(entry) * scalar_state(mu, entry), entry)
        write_scalar(state, "mu_product", mu_product)

        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
        grad_step = -lr * (1.0 - mu) / (1.0 - mu_product)
        avg_step = -lr * mu_next / (1.0 - mu_product * mu_next)
        if group["differentiable"]:  # PyTorch's recorded form: scaled copies, then divided
            param.addcdiv_(grad * grad_step, denom)
            param.addcdiv_(exp_avg * avg_step, denom)
        else:
            param.addcdiv_(grad, denom, value=grad_step)
            param.addcdiv_(exp_avg, denom, value=avg_step)
