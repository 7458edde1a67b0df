"""SparseAdam: Adam's lazy variant for embedding tables, which updates only the rows that
have a gradient."""

from __future__ import annotations

import math
from typing import Any

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: Adam that leaves the rows without a gradient alone,
    values and moments both.

    PyTorch requires sparse gradients (``nn.Embedding(sparse=True)``) and steps the rows they
    hold; a dense gradient raises, as in PyTorch. TensorWeaver stores the sparse ones dense
    (``is_sparse`` all the same: nn/functional/sparse.py's ``SparseGradient``): a row (a slice
    along dimension 0; an element of a 1-d parameter) takes part in a step when its gradient
    is non-zero somewhere. Those rows step as in PyTorch: with ``t`` the number of steps
    the parameter had a gradient, ``m += (1 - beta1) * (g - m)``, ``v += (1 - beta2) *
    (g**2 - v)`` and ``p -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + eps)``.
    The one difference: a row that PyTorch's sparse gradient holds with zero values (looked
    up, but its gradient cancels) is skipped here.
    """

    # Its step count stays a Python int, as PyTorch keeps it (not a tensor).
    _scalar_state = ()
    _counted_state = ("step",)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        # PyTorch's words: zero is as invalid as a negative learning rate or epsilon here.
        if "lr" in group and not group["lr"] > 0:
            raise ValueError(f"SparseAdam: Invalid learning rate: {group['lr']}; expected > 0")
        if "eps" in group and not group["eps"] > 0:
            raise ValueError(f"SparseAdam: Invalid epsilon value: {group['eps']}; expected > 0")

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "exp_avg": tw.zeros_like(param), "exp_avg_sq": tw.zeros_like(param)}

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        # (Every gradient checked before any parameter steps, as PyTorch's.)
        for p in params:
            if not p.grad.is_sparse:
                raise RuntimeError(
                    "SparseAdam does not support dense gradients, please consider Adam instead"
                )
        super()._step_group(params, group)

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = state["step"] = state["step"] + 1
        beta1, beta2 = group["betas"]
        grad = -param.grad if group["maximize"] else param.grad
        rows = grad != 0
        if grad.ndim > 1:
            rows = rows.any(dim=tuple(range(1, grad.ndim)), keepdim=True)

        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        # PyTorch's order of operations, so that the trajectories agree to the last bit.
        m = exp_avg + (grad - exp_avg) * (1 - beta1)
        v = exp_avg_sq + (grad * grad - exp_avg_sq) * (1 - beta2)
        exp_avg.copy_(tw.where(rows, m, exp_avg))
        exp_avg_sq.copy_(tw.where(rows, v, exp_avg_sq))

        step_size = group["lr"] * math.sqrt(1 - beta2**step) / (1 - beta1**step)
        stepped = param + (m / (v.sqrt() + group["eps"])) * -step_size
        param.copy_(tw.where(rows, stepped, param))
