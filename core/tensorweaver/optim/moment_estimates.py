"""What Adam and its variants (AdamW, Adamax, NAdam, RAdam) share: the start of their
options, their state (scalars such as the step count, and running moment estimates of the
gradient shaped as the parameter) and the start of each step, which moves those estimates
toward the step's gradient."""

from __future__ import annotations

from typing import Any

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT, count_step, scalar_tensor


class MomentEstimates(Optimizer):
    """Base of the optimizers that keep running moment estimates of the gradient: the first,
    ``exp_avg``, an exponential moving average; the second one as :meth:`_second_moment`
    keeps it (Adam's ``exp_avg_sq``, Adamax's ``exp_inf``)."""

    #: The scalar state entries, in order, and the values they start from.
    _scalar_starts: dict[str, float] = {"step": 0.0}
    #: The moment estimates, in order after the scalars: zeros shaped as the parameter at first.
    _moments: tuple[str, ...] = ("exp_avg", "exp_avg_sq")

    def __init__(
        self,
        params: ParamsT,
        lr: Any,
        betas: tuple[Any, Any],
        eps: float,
        weight_decay: float,
        **options: Any,
    ) -> None:
        # The shared options first, then the optimizer's own in the order it gives: PyTorch's
        # order of each optimizer's defaults (state dicts and reprs list them so).
        # (betas as given: a list stays a list, as in PyTorch's Adamax, NAdam and RAdam)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        super().__init__(params, {**defaults, **options})

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = {name: scalar_tensor(start) for name, start in self._scalar_starts.items()}
        for name in self._moments:
            state[name] = tw.zeros_like(param)
        return state

    def _moments_step(
        self, param: Any, group: dict[str, Any], decoupled: bool
    ) -> tuple[dict[str, Any], float, Any]:
        """Count ``param``'s step and move its moment estimates toward the gradient to descend
        (``Optimizer._grad``'s, with ``decoupled`` weight decay or L2); return ``param``'s
        state, its new step count and that gradient (not to be modified in place)."""
        state = self._state_of(param, group)
        step = count_step(state)
        grad = self._grad(param, group, decoupled=decoupled)
        beta1, beta2 = group["betas"]
        state["exp_avg"].lerp_(grad, 1 - self._lerp_beta(beta1, param))
        self._second_moment(state, grad, beta2, group)
        return state, step, grad

    @staticmethod
    def _lerp_beta(beta1: Any, param: Any) -> Any:
        """``beta1`` as the first moment's ``lerp_`` weight ``1 - beta1`` is formed from it
        (a tensor beta1 in its own dtype, as PyTorch's NAdam, RAdam and Adamax)."""
        return beta1

    def _second_moment(
        self, state: dict[str, Any], grad: Any, beta2: Any, group: dict[str, Any]
    ) -> None:
        """Move the second moment estimate toward ``grad``: Adam's moving average of its
        square."""
        state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
