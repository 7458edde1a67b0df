"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.optim.foreach import each
from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import (
    ParamsT,
    count_steps,
    read_scalar,
    scalar_state,
    write_scalar,
)


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
        mu = _momentum(beta1, step, group)
        mu_next = _momentum(beta1, step + 1, group)
        mu_product = _multiply_mu_product(state, mu)

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

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_nadam (without capturable), operation by operation
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group, group["decoupled_weight_decay"])
        steps = count_steps(states)
        lr, (beta1, beta2) = group["lr"], group["betas"]
        exp_avgs = [state["exp_avg"] for state in states]
        exp_avg_sqs = [state["exp_avg_sq"] for state in states]
        each("lerp_", exp_avgs, grads, 1 - beta1)
        each("mul_", exp_avg_sqs, beta2)
        each("addcmul_", exp_avg_sqs, grads, grads, value=1 - beta2)
        denom = each("sqrt", exp_avg_sqs)
        mus = [_momentum(beta1, step, group) for step in steps]
        mu_nexts = [_momentum(beta1, step + 1, group) for step in steps]
        for state, mu in zip(states, mus):
            _multiply_mu_product(state, mu)
        each("div_", denom, [(1 - beta2**step) ** 0.5 for step in steps])
        each("add_", denom, group["eps"])
        products = [read_scalar(state["mu_product"]) for state in states]
        grad_steps = [-lr * (1.0 - mu) / (1.0 - p) for mu, p in zip(mus, products)]
        avg_steps = [-lr * mu_next / (1.0 - p * mu_next) for mu_next, p in zip(mu_nexts, products)]
        each("addcdiv_", params, grads, denom, value=grad_steps)
        each("addcdiv_", params, exp_avgs, denom, value=avg_steps)


def _momentum(beta1: Any, step: float, group: dict[str, Any]) -> Any:
    """NAdam's momentum coefficient at ``step``."""
    return beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))


def _multiply_mu_product(state: dict[str, Any], mu: Any) -> float:
    """Multiply ``state["mu_product"]`` by ``mu`` as PyTorch does (in the entry's dtype);
    return the new product."""
    entry = state["mu_product"]
    return write_scalar(
        state, "mu_product", scalar_state(read_scalar(entry) * scalar_state(mu, entry), entry)
    )
