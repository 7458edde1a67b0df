"""Averaged stochastic gradient descent (Polyak-Ruppert averaging)."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.foreach import each
from tensorweaver.optim.optimizer import (
    TRACED,
    Optimizer,
    ParamsT,
    as_float32,
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
    ``foreach=True`` steps as PyTorch's foreach step: in its order (where a gradient shares
    memory with what the step writes, or a parameter is listed twice) and with its rounding.
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

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        if group.get("foreach"):  # (its own rounding of the update and of eta, always)
            self._step_in_foreach_order(params, group)
        else:
            super()._step_group(params, group)

    def _step_in_foreach_order(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's _multi_tensor_asgd (without capturable), operation by operation: the
        # weight decay lambd * param added to the gradient before the parameter changes
        states = [self._state_of(p, group) for p in params]
        grads = self._foreach_grads(params, group)
        steps = count_steps(states)
        intermediate = [g.add(p, alpha=group["lambd"]) for g, p in zip(grads, params)]
        # (its addcmul_ with the 0-d eta and mu, as the host reads them: a compiled step
        # recomputes them, where their arrays as operands would alias the step's now and then)
        etas = [read_scalar(state["eta"]) for state in states]
        each("sub_", params, [_term(t, eta) for t, eta in zip(intermediate, etas)])
        axs = [state["ax"] for state in states]
        mus = [read_scalar(state["mu"]) for state in states]
        each("add_", axs, [_term(p - ax, mu) for p, ax, mu in zip(params, axs, mus)])
        for state, step in zip(states, steps):
            _schedule(state, step, group, _foreach_eta(step, state["step"].dtype, group))


def _term(t: Any, factor: float) -> Any:
    """``t * factor``, the term PyTorch's ``_foreach_addcmul_`` adds on a CPU: for a float16 or
    bfloat16 ``t`` in float32 with ``factor`` rounded to ``t``'s dtype first (exact there),
    so that the in-place sum rounds to ``t``'s dtype once, as torch's kernel does."""
    if t.dtype is tw.float16 or t.dtype is tw.bfloat16:
        return t.float() * (tw.ones((), dtype=t.dtype, device=t.device) * factor).float()
    return t * factor


def _schedule(state: dict[str, Any], step: float, group: dict[str, Any], eta: Any = None) -> None:
    """Set ``state``'s eta (``eta``, else as PyTorch's single-tensor step computes it) and mu
    for the step after ``step``."""
    if eta is None:
        lr = group["lr"]
        # (PyTorch computes eta with the step's value in float64, or with a tensor lr in
        # the lr's dtype, then copies it into eta)
        eta = lr / (1 + group["lambd"] * lr * step) ** group["alpha"]
        if isinstance(eta, tw.Tensor):
            eta = eta.item()
    write_scalar(state, "eta", scalar_state(eta, state["step"]))
    mu = 1 / host_max(1, step - group["t0"])
    write_scalar(state, "mu", scalar_state(mu, state["mu"]))


def _foreach_eta(step: float, dtype: Any, group: dict[str, Any]) -> Any:
    """eta for the step after ``step`` as PyTorch's foreach step computes it from the step
    tensor (of ``dtype``): ``lr / (1 + lambd * lr * step) ** alpha``, each operation a tensor
    operation, its Python number and its result rounded to the tensor's dtype; ``lr / t`` as
    ``t.reciprocal() * lr`` (with a tensor lr: a division, in the dtype both promote to)."""
    lr, lambd, alpha = group["lr"], group["lambd"], group["alpha"]
    if isinstance(lr, tw.Tensor):
        rounded, own = _rounding(tw.promote_types(lr.dtype, dtype)), _rounding(lr.dtype)
        value = lr.item()
        t = rounded(own(own(lambd) * value) * step)
        return rounded(value / _pow(rounded(1 + t), alpha, rounded))
    rounded = _rounding(dtype)
    t = rounded(rounded(lambd * lr) * step)  # (the Python product lambd * lr, then the tensor)
    return rounded(rounded(1 / _pow(rounded(1 + t), alpha, rounded)) * rounded(lr))


def _pow(x: Any, exponent: float, rounded: Any) -> Any:
    """``x ** exponent`` as torch.pow of a tensor by a number computes it, ``rounded`` to the
    tensor's dtype: in float64 (a double exponent), but for the exponents its kernels compute
    in the tensor's dtype. (For 0.5, torch's sqrt kernel on a CPU is not always correctly
    rounded, as this power is: an ulp apart now and then.)"""
    if exponent == -1:
        return rounded(1 / x)
    if exponent == -0.5:
        return rounded(1 / rounded(x**0.5))
    if exponent in (2, 3, -2):
        square = rounded(x * x)
        if exponent == 2:
            return square
        return rounded(square * x) if exponent == 3 else rounded(1 / square)
    return rounded(x**exponent)


def _rounding(dtype: Any) -> Any:
    """A number rounded to ``dtype`` (float32 or float64), as a 0-d tensor holds it."""
    return as_float32 if dtype is tw.float32 else _unchanged


def _unchanged(value: Any) -> Any:
    return value
