"""Averaged stochastic gradient descent (Polyak-Ruppert averaging)."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT, scalar_state


class ASGD(Optimizer):
    """``torch.optim.ASGD``: SGD with a decaying step ``eta = lr / (1 + lambd*lr*t)**alpha``
    and a running average ``ax`` of the iterates, which starts at step ``t0``.

    ``foreach`` and ``capturable`` are accepted for PyTorch compatibility and change
    nothing here.
    """

    _scalar_state = ("step", "eta", "mu")

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        return {
            "step": 0.0,
            "eta": scalar_state(group["lr"]),
            "mu": 1.0,
            "ax": tw.zeros_like(param),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = state["step"] = state["step"] + 1
        grad = self._grad(param, group)
        eta = state["eta"]
        param.mul_(1 - group["lambd"] * eta)
        param.add_(grad, alpha=-eta)
        if state["mu"] != 1:
            state["ax"].add_((param - state["ax"]) * state["mu"])
        else:
            state["ax"].copy_(param)
        lr = group["lr"]
        state["eta"] = scalar_state(lr / (1 + group["lambd"] * lr * step) ** group["alpha"])
        state["mu"] = scalar_state(1 / max(1, step - group["t0"]))
