"""Averaged stochastic gradient descent (Polyak-Ruppert averaging)."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.foreach import each
from tensorweaver.optim.optimizer import (
    TRACED,
    Optimizer,
    ParamsT,
    count_step,
    count_steps,
    host_max,
    read_scalar,
    scalar_state,
    scalar_tensor,
    write_scalar,
)


class ASGD(Optimizer):
    """``torch.optim.ASGD``: SGD with a decaying step ``eta = lr / (1 + lambd*lr*t)**alpha``
    and a running average ``ax`` of the iterates, which starts at step ``t0``.

    ``capturable`` is accepted for PyTorch compatibility and changes nothing here;
    ``foreach=True`` steps in PyTorch's foreach order where that order shows (a gradient
    sharing memory with what the step writes, a parameter listed twice).
    """

    _tensor_options = ("lr",)  # (its step computes with them as PyTorch's)
    _sparse_refusal = "ASGD does not support sparse gradients"

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
            "step": scalar_tensor(0.0),
            "eta": scalar_tensor(lr.item() if isinstance(lr := group["lr"], tw.Tensor) else lr),
            "mu": scalar_tensor(1.0),
            "ax": tw.zeros_like(param),
        }

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state = self._state_of(param, group)
        step = count_step(state)
        grad = self._grad(param, group)
        eta, mu = read_scalar(state["eta"]), read_scalar(state["mu"])
        param.mul_(1 - group["lambd"] * eta)
        param.add_(grad, alpha=-eta)
        ax = state["ax"]
        if TRACED.open:  # tw.compile traces: the choice as data (mu changes at step t0 + 2)
            averaged = tw.full((), mu, dtype=tw.float64, device=param.device) != 1
            ax.copy_(tw.where(averaged, ax + (param - ax) * mu, param))
        elif mu != 1:
            ax.add_((param - ax) * mu)
        else:
            ax.copy_(param)
        _schedule(state, step, group)

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_asgd (without capturable), operation by operation: the
        # weight decay lambd * param added to the gradient before the parameter changes
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group)
        steps = count_steps(states)
        intermediate = [g.add(p, alpha=group["lambd"]) for g, p in zip(grads, params)]
        etas = [state["eta"] for state in states]
        each("addcmul_", params, intermediate, etas, value=-1)
        axs = [state["ax"] for state in states]
        intermediate = [p - ax for p, ax in zip(params, axs)]
        each("addcmul_", axs, intermediate, [state["mu"] for state in states])
        for state, step in zip(states, steps):
            _schedule(state, step, group)


def _schedule(state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
    """Set ``state``'s eta and mu for the step after ``step``."""
    lr = group["lr"]
    # (PyTorch computes eta with the step tensor, in its dtype, then copies it into eta;
    # with a tensor lr, in the lr's dtype.)
    eta = lr / (1 + group["lambd"] * lr * step) ** group["alpha"]
    if isinstance(eta, tw.Tensor):
        eta = eta.item()
    write_scalar(state, "eta", scalar_state(eta, state["step"]))
    mu = 1 / host_max(1, step - group["t0"])
    write_scalar(state, "mu", scalar_state(mu, state["mu"]))
