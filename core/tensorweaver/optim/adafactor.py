"""Adafactor: Adam-like steps whose second moment of a matrix is kept as row and column
factors (memory linear in the sides, not their product)."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT, count_step, scalar_tensor


class Adafactor(Optimizer):
    """``torch.optim.Adafactor``: ``beta2_t = 1 - t**beta2_decay``; relative step size
    ``min(lr, 1/sqrt(t))`` times the parameter's RMS (at least ``eps[1]``); the update is
    clipped so its RMS is at most ``d``. Weight decay is decoupled (``p *= 1 - lr*wd``).

    ``foreach`` is accepted for PyTorch compatibility; the steps are those of PyTorch's
    per-tensor implementation.
    """

    _tensor_options = ("lr",)  # (its step computes with them as PyTorch's)
    _sparse_refusal = "Adafactor does not support sparse gradients"

    _supports_complex = False

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[Optional[float], float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: Optional[bool] = None,
        maximize: bool = False,
    ) -> None:
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _non_negative(self) -> dict[str, str]:
        return {
            "lr": "Learning rate should be >= 0 but is",
            "weight_decay": "weight_decay should be >= 0 but is",
        }

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        eps1, eps2 = group["eps"]
        problems = [
            (
                not group["beta2_decay"] <= 0,
                f"beta2_decay should be <= 0 but is: {group['beta2_decay']}",
            ),
            (eps1 is not None and not eps1 >= 0, f"epsilon1 should be >= 0 but is: {eps1}"),
            (not eps2 >= 0, f"epsilon2 should be >= 0 but is: {eps2}"),
            (not group["d"] >= 1, f"Clipping threshold d should be >= 1 but is: {group['d']}"),
        ]
        for bad, message in problems:
            if bad:
                raise ValueError(f"Adafactor: {message}")

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        state: dict[str, Any] = {"step": scalar_tensor(0.0)}
        if param.dim() > 1:  # factored: one mean per row and one per column
            state["row_var"] = tw.zeros(
                *param.shape[:-1], 1, dtype=param.dtype, device=param.device
            )
            state["col_var"] = tw.zeros(
                *param.shape[:-2], 1, param.shape[-1], dtype=param.dtype, device=param.device
            )
        else:
            state["variance"] = tw.zeros_like(param)
        return state

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        # As PyTorch: an unset eps1 is the machine epsilon of the group's first parameter.
        eps1 = group["eps"][0]
        if eps1 is None:
            eps1 = tw.finfo(params[0].dtype).eps
        for p in params:
            self._adafactor(p, group, eps1)

    def _adafactor(self, param: Any, group: dict[str, Any], eps1: float) -> None:
        state = self._state_of(param, group)
        step = count_step(state)
        lr, eps2 = group["lr"], group["eps"][1]
        grad = -param.grad if group["maximize"] else param.grad
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / step**0.5)
        alpha = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * rho
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])

        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(
                grad.norm(dim=-1, keepdim=True).square() / grad.shape[-1], one_minus_beta2
            )
            col_var.lerp_(
                grad.norm(dim=-2, keepdim=True).square() / grad.shape[-2], one_minus_beta2
            )
            estimate = (row_var @ col_var) / row_var.mean(dim=-2, keepdim=True).clamp(min=eps1)
        else:
            estimate = state["variance"].lerp_(grad * grad, one_minus_beta2)
        # eps1 is squared because the estimate's square root is taken next.
        update = estimate.clamp(min=eps1 * eps1).rsqrt() * grad
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        param.add_(update, alpha=-alpha / denom)
