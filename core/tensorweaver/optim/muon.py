"""Muon: momentum SGD whose update matrix is orthogonalised by Newton-Schulz iterations."""

from __future__ import annotations

import math
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer, ParamsT

_ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


class Muon(Optimizer):
    """``torch.optim.Muon`` for 2-D parameters: ``buf.lerp_(g, 1 - momentum)``; the update
    (Nesterov: ``g.lerp(buf, momentum)``) is orthogonalised by ``ns_steps`` quintic
    Newton-Schulz iterations in bfloat16, scaled by the shape (``adjust_lr_fn``), after
    decoupled weight decay.

    On a backend without bfloat16 (NumPy) the iterations run in float32, so the update
    differs from PyTorch's by bfloat16's rounding (about 1e-2 relative).
    """

    _sparse_refusal = "Muon does not support sparse gradients"

    _supports_complex = False

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (3.4445, -4.7750, 2.0315),
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: Optional[str] = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {tuple(p.shape)}; optimize the others with e.g. AdamW"
                    )

    def _non_negative(self) -> dict[str, str]:
        return {
            "lr": "Learning rate should be >= 0 but is",
            "momentum": "momentum should be >= 0 but is",
            "weight_decay": "weight decay should be >= 0 but is",
        }

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group["adjust_lr_fn"] not in _ADJUST_LR_FNS:
            raise ValueError(
                f"Muon: Adjust learning rate function {group['adjust_lr_fn']} is not supported; "
                "use None, 'original' or 'match_rms_adamw'"
            )

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        grad = param.grad
        if grad.dim() != 2:
            raise ValueError("Muon: Param gradient must be a 2D matrix")
        state = self.state[param]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = tw.zeros_like(grad)
        momentum = group["momentum"]
        buf = state["momentum_buffer"].lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _orthogonalised(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        lr = group["lr"]
        rows, cols = param.shape[:2]
        if group["adjust_lr_fn"] in (None, "original"):
            ratio = math.sqrt(max(1, rows / cols))
        else:
            ratio = 0.2 * math.sqrt(max(rows, cols))
        param.mul_(1 - lr * group["weight_decay"])
        param.add_(update, alpha=-lr * ratio)


def _orthogonalised(grad: Any, coefficients: tuple[float, ...], steps: int, eps: float) -> Any:
    """The Newton-Schulz approximation of ``U V^T`` (``grad = U S V^T``), as PyTorch's."""
    if steps >= 100:
        raise ValueError("Muon: Number of steps must be less than 100 for computational efficiency")
    if len(coefficients) != 3:
        raise ValueError("Muon: Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    dtype = tw.bfloat16 if tw.bfloat16 in grad.backend.dtypes else tw.float32
    x = grad.to(dtype)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)  # spectral norm at most 1
    for _ in range(steps):
        gram = x @ x.T
        # Each addmm accumulates in float32 and rounds once, as PyTorch's bfloat16 kernel.
        gram32 = gram.float()
        update = tw.addmm(gram32, gram32, gram32, beta=b, alpha=c)
        x = tw.addmm(x.float(), update.to(dtype).float(), x.float(), beta=a).to(dtype)
    return x.T if tall else x
