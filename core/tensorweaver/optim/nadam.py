"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import ParamsT, read_scalar, scalar_state, write_scalar


class NAdam(MomentEstimates):
    """``torch.optim.NAdam``; ``decoupled_weight_decay=True`` gives NAdamW."""

    _tensor_options = ("lr", "betas")  # (its step computes with them as PyTorch's)
    _sparse_refusal = "NAdam does not support sparse gradients"

    _scalar_state = ("step", "mu_product")
    _scalar_starts = {"step": 0.0, "mu_product": 1.0}

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
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
        )

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state, step, grad = self._moments_step(param, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2) = group["lr"], group["betas"]

        # The momentum coefficients of this step and the next one.
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        entry = state["mu_product"]
        mu_product = scalar_state(read_scalar(entry) * scalar_state(mu, entry), entry)
        write_scalar(state, "mu_product", mu_product)

        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        denom = (exp_avg_sq / (1 - beta2**step)).sqrt() + group["eps"]
        grad_step = -lr * (1.0 - mu) / (1.0 - mu_product)
        avg_step = -lr * mu_next / (1.0 - mu_product * mu_next)
        if group["differentiable"]:  # PyTorch's recorded form: scaled copies, then divided
            param.addcdiv_(grad * grad_step, denom)
            param.addcdiv_(exp_avg * avg_step, denom)
        else:
            param.addcdiv_(grad, denom, value=grad_step)
            param.addcdiv_(exp_avg, denom, value=avg_step)
