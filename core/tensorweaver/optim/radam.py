"""RAdam: Adam whose adaptive step is switched on once its variance is tractable."""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.optim.foreach import each
from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import ParamsT, count_steps


class RAdam(MomentEstimates):
    """``torch.optim.RAdam``; ``decoupled_weight_decay=True`` gives RAdamW.

    While the length of the approximated simple moving average ``rho_t`` is at most
    5 the step is plain bias-corrected momentum; after that it is rectified Adam.
    """

    _tensor_options = ("lr", "betas")  # (its step computes with them as PyTorch's)
    _sparse_refusal = "RAdam does not support sparse gradients"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
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
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state, step, _ = self._moments_step(param, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2) = group["lr"], group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = (
                (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
            ) ** 0.5
            adaptive_lr = bias_correction2**0.5 / (exp_avg_sq.sqrt() + group["eps"])
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_radam (without capturable), operation by operation
        states = [self._state_of(p, group) for p in params]
        steps = count_steps(states)
        grads = self._foreach_grads(params, group, group["decoupled_weight_decay"])
        lr, (beta1, beta2) = group["lr"], group["betas"]
        rho_inf = 2 / (1 - beta2) - 1
        rhos = [rho_inf - 2 * k * (beta2**k) / (1 - beta2**k) for k in steps]
        exp_avgs = [state["exp_avg"] for state in states]
        exp_avg_sqs = [state["exp_avg_sq"] for state in states]
        each("lerp_", exp_avgs, grads, 1 - beta1)
        each("mul_", exp_avg_sqs, beta2)
        each("addcmul_", exp_avg_sqs, grads, grads, value=1 - beta2)
        rects = [
            ((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)) ** 0.5
            if rho > 5
            else 0
            for rho in rhos
        ]
        corrections1 = [1 - beta1**k for k in steps]
        plain_steps = [-(lr * (0 if rect > 0 else 1.0) / c) for rect, c in zip(rects, corrections1)]
        corrections2 = [
            ((1 - beta2**k) ** 0.5) * (lr * rect / c) * -1
            for k, rect, c in zip(steps, rects, corrections1)
        ]
        buffer = each("sqrt", exp_avg_sqs)
        each("add_", buffer, group["eps"])
        each("div_", buffer, corrections2)
        each("reciprocal_", buffer)
        each("add_", buffer, plain_steps)
        each("addcmul_", params, exp_avgs, buffer)
