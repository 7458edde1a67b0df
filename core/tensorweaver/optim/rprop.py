"""Rprop: per-element step sizes that grow while the gradient keeps its sign."""

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


class Rprop(Optimizer):
    """``torch.optim.Rprop``: each element's step size is multiplied by ``etas[1]`` when
    its gradient keeps its sign and by ``etas[0]`` when it flips (that step is then
    skipped), clamped to ``step_sizes``; the parameter moves by the step size against
    the gradient's sign. Steps start at ``lr``.

    ``capturable`` is accepted for PyTorch compatibility and changes nothing here;
    ``foreach=True`` steps in PyTorch's foreach order where that order shows (a gradient
    sharing memory with what the step writes, a parameter listed twice).
    """

    _sparse_refusal = "Rprop does not support sparse gradients"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "etas": tuple(etas),
            "step_sizes": tuple(step_sizes),
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        etas = group["etas"]
        if len(etas) != 2 or not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(
                f"Rprop: Invalid eta values: {etas[0]}, {etas[1]} (etas=(etaminus, etaplus) "
                "must have 0 < etaminus < 1 < etaplus)"
            )

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {
            "step": scalar_tensor(0.0),
            "prev": tw.zeros_like(param),
            "step_size": tw.full_like(param, group["lr"]),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        count_step(state)
        etaminus, etaplus = group["etas"]
        step_min, step_max = group["step_sizes"]
        grad = -param.grad if group["maximize"] else param.grad
        sign = (grad * state["prev"]).sign()
        factor = tw.ones_like(sign).masked_fill(sign > 0, etaplus).masked_fill(sign < 0, etaminus)
        state["step_size"].mul_(factor).clamp_(step_min, step_max)
        # After a sign flip the step is skipped and the flip is forgotten.
        grad = tw.where(sign < 0, tw.zeros_like(grad), grad)
        param.addcmul_(grad.sign(), state["step_size"], value=-1)
        state["prev"].copy_(grad)

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_rprop (without capturable), operation by operation
        states = [self._state_of(p, group) for p in params]
        count_steps(states)
        etaminus, etaplus = group["etas"]
        step_min, step_max = group["step_sizes"]
        prevs = [state["prev"] for state in states]
        sizes = [state["step_size"] for state in states]
        signs = each("mul", [p.grad for p in params], prevs)
        each("copy_", prevs, [p.grad for p in params])
        if group["maximize"]:
            each("neg_", signs)
            each("neg_", prevs)
        factors = [
            tw.ones_like(s).masked_fill(s > 0, etaplus).masked_fill(s < 0, etaminus)
            for s in each("sign", signs)
        ]
        each("mul_", sizes, factors)
        each("clamp_", sizes, step_min, step_max)
        # (after a sign flip the step is skipped and the flip forgotten; PyTorch finds the
        # flips as the factors equal to etaminus)
        for prev, factor in zip(prevs, factors):
            prev.copy_(tw.where(factor == etaminus, tw.zeros_like(prev), prev))
        each("addcmul_", params, each("sign", prevs), sizes, value=-1)
