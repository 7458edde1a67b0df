"""``fit``'s ``precision=``: the dtype the model trains in, or mixed precision by autocast.

``"fp32"``/``"fp64"`` cast the model (and the floating point data) to that dtype.
``"bf16"``, ``"fp16"`` and ``"tf32"`` keep float32 master weights and run each forward pass
under ``tw.autocast``; ``"fp16"`` adds dynamic loss scaling (``tw.GradScaler``) so that small
gradients do not underflow. ``tw.amp.check_precision`` says, before the first step, when the
device cannot compute in the precision asked for.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager

import tensorweaver as tw
from tensorweaver.amp import PRECISIONS, GradScaler, check_precision
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.creation import backend_for
from tensorweaver.optim.optimizer import Optimizer
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor

#: Precisions that cast the whole model.
FULL: dict[str, DType] = {"fp32": tw.float32, "fp64": tw.float64}


class Precision:
    """How one training step runs in the precision asked for."""

    def __init__(self, precision: str | None, device: Device) -> None:
        self.precision = precision
        self.device = device
        self.dtype = FULL.get(precision) if precision is not None else None
        self.mixed = precision is not None and precision not in FULL
        # The device's kind ("cpu", "cuda"), as PyTorch scripts pass it: a "cuda" scaler
        # disables itself where there is no CUDA.
        self.scaler = GradScaler(device.kind) if precision == "fp16" else None
        if precision is None:
            return
        if precision not in PRECISIONS:
            raise ValueError(f"fit: unknown precision {precision!r}; use one of {PRECISIONS}")
        try:
            check_precision(precision, backend_for(device))
        except ValueError as exc:
            raise ValueError(f"fit: {exc}") from exc

    def autocast(self) -> AbstractContextManager:
        """The context of a forward pass and its loss."""
        if not self.mixed:
            return contextlib.nullcontext()
        return tw.autocast(self.precision, device=self.device.name)

    def backward(self, loss: Tensor) -> None:
        (loss if self.scaler is None else self.scaler.scale(loss)).backward()

    def unscale_(self, optimizer: Optimizer) -> None:
        """Bring scaled gradients back to their true size (before clipping them)."""
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: Optimizer) -> None:
        """``optimizer.step()``; with loss scaling, skipped when a gradient overflowed."""
        if self.scaler is None:
            optimizer.step()
        else:
            self.scaler.step(optimizer)
            self.scaler.update()
