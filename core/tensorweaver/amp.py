"""Mixed precision: ``with tw.autocast("bf16"):`` and dynamic loss scaling for fp16.

Inside an autocast block, matrix products (``matmul`` and the convolution and attention
composites) compute in the low-precision dtype while everything else keeps its own dtype, so
float32 parameters stay the master weights and type promotion brings results back to float32
where they meet them (bias adds, norms, losses). ``fp16`` gradients can underflow:
:class:`GradScaler` scales the loss up and the gradients back down, skipping steps whose
gradients overflowed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType

#: Precision names users pass (``fit(precision=...)``, ``autocast(...)``).
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16")
_LOW: dict[str, DType] = {"bf16": dtypes.bfloat16, "fp16": dtypes.float16}

_autocast: ContextVar[DType | None] = ContextVar("tensorweaver_autocast", default=None)

#: The hot path reads the autocast dtype (None outside a block) through this bound method.
autocast_dtype = _autocast.get


def check_precision(precision: str, backend: Any) -> None:
    """A clear error when ``backend``'s device cannot compute in ``precision``."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    name = backend.device.name
    wanted = {"fp64": dtypes.float64, "fp32": dtypes.float32, "tf32": dtypes.float32}.get(
        precision, _LOW.get(precision)
    )
    if wanted not in backend.dtypes:
        raise ValueError(
            f"precision {precision!r} is not available on {name}: it has no {wanted.name}; "
            + (
                "use fp32 or fp16 there, or a torch device (tw.set_backend('torch'))"
                if precision == "bf16"
                else "use fp32"
            )
        )
    if precision == "tf32" and not getattr(backend, "has_tf32", False):
        raise ValueError(
            f"precision 'tf32' needs tensor cores (a CUDA device of the torch backend); "
            f"{name} has none: use fp32"
        )


#: PyTorch's device types: ``autocast("cuda")`` applies to the current device, whatever it is.
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "privateuseone")
#: PyTorch's default autocast dtype per device type (``torch.get_autocast_dtype``).
_DEFAULT_LOW = {"cpu": "bf16"}
_PRECISION_OF = {
    dtypes.bfloat16: "bf16",
    dtypes.float16: "fp16",
    dtypes.float32: "fp32",
    dtypes.float64: "fp64",
}


def _precision(device_type: str, dtype: DType | None, device: Any) -> tuple[str, Any]:
    """The precision name and device for ``autocast(device_type, dtype, device=device)``."""
    if dtype is not None and dtype not in _PRECISION_OF:
        raise ValueError(
            f"autocast: dtype {dtype!r} is not a floating-point dtype; use tw.bfloat16 or "
            "tw.float16"
        )
    if device_type in PRECISIONS:
        if dtype is not None:
            raise ValueError(
                f"autocast: give either a precision ({device_type!r}) or dtype=, not both"
            )
        return device_type, device
    if device_type not in _TORCH_DEVICE_TYPES:
        if device is not None:  # then the first argument can only be a precision
            return device_type, device
        device = _device_spec(device_type)
    elif device is None and device_type != "cpu":
        device = _gpu_of_kind(device_type)
    if dtype is not None:
        return _PRECISION_OF[dtype], device
    return _DEFAULT_LOW.get(device_type, "fp16"), device


def _gpu_of_kind(kind: str) -> str | None:
    """``kind`` ("cuda") when a backend provides such a device, so that ``autocast("cuda")``
    checks the GPU's dtypes; None (the current device) on a machine without one."""
    from tensorweaver.errors import DeviceNotFoundError
    from tensorweaver.selection import backend_of

    try:
        backend_of(kind)
    except DeviceNotFoundError:
        return None
    return kind


def _device_spec(name: str) -> str:
    from tensorweaver.errors import UnknownBackendError
    from tensorweaver.registry import backend_object

    try:
        backend_object(name)
    except UnknownBackendError:
        raise ValueError(
            f"autocast: {name!r} is not a device type ({', '.join(_TORCH_DEVICE_TYPES[:2])}), "
            f"a TensorWeaver device ('numpy', 'torch:cpu') or a precision "
            f"({', '.join(PRECISIONS)})"
        ) from None
    return name


@contextmanager
def autocast(
    device_type: str = "bf16",
    dtype: DType | None = None,
    enabled: bool = True,
    cache_enabled: bool | None = None,
    *,
    device: Any = None,
) -> Iterator[None]:
    """Compute matrix products in low precision on the current device: a ``with`` block or a
    decorator.

    As PyTorch's ``autocast(device_type, dtype=None, enabled=True)``: ``device_type`` is
    ``"cpu"``/``"cuda"`` (default dtype bfloat16 for ``"cpu"``, float16 otherwise) or a
    TensorWeaver device spec; it may also be a precision name (``"bf16"``, ``"fp16"``;
    ``"tf32"`` turns on TF32 tensor cores; ``"fp32"``/``"fp64"`` change nothing).
    ``enabled=False`` turns autocast off inside the block. ``cache_enabled`` is accepted and
    has no effect (there is no cast cache to keep).
    """
    if not enabled:
        token = _autocast.set(None)
        try:
            yield
        finally:
            _autocast.reset(token)
        return
    from tensorweaver.ops.creation import backend_for

    precision, device = _precision(device_type, dtype, device)
    backend = backend_for(device)
    check_precision(precision, backend)
    if precision == "tf32":
        backend.set_tf32(True)
        try:
            yield
        finally:
            backend.set_tf32(False)
        return
    token = _autocast.set(_LOW.get(precision))
    try:
        yield
    finally:
        _autocast.reset(token)


class GradScaler:
    """Dynamic loss scaling for fp16 training, as ``torch.amp.GradScaler``.

    ``scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()``: the step is
    skipped when a gradient is inf or NaN, and the scale then shrinks by ``backoff_factor``;
    after ``growth_interval`` clean steps it grows by ``growth_factor``.
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        # ``device`` is PyTorch's (``GradScaler("cuda")``): scaling runs on the gradients'
        # own device, so it only names where the user trains.
        if not isinstance(device, str):
            raise TypeError(
                f"GradScaler: device must be a string such as 'cuda' or 'cpu', got {device!r}; "
                "pass the scale by keyword: GradScaler(init_scale=...)"
            )
        self.device = device
        self.scale_value = float(init_scale)
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = growth_interval
        self.enabled = enabled
        self._clean_steps = 0
        self._found_inf = False
        self._unscaled: set[int] = set()

    def scale(self, loss: Any) -> Any:
        return loss * self.scale_value if self.enabled else loss

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients by the scale (once per step), noting any inf or NaN with a
        single read back from the device."""
        if not self.enabled or id(optimizer) in self._unscaled:
            return
        from tensorweaver.autograd.mode import no_grad
        from tensorweaver.ops.movement import stack

        inverse = 1.0 / self.scale_value
        finite = []
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad = p.grad * inverse
                        finite.append(p.grad.isfinite().all())
        if finite and not bool(stack(finite).all()):
            self._found_inf = True
        self._unscaled.add(id(optimizer))

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        self.unscale_(optimizer)
        if self._found_inf:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self) -> None:
        if not self.enabled:
            return
        if self._found_inf:
            self.scale_value *= self.backoff_factor
            self._clean_steps = 0
        else:
            self._clean_steps += 1
            if self._clean_steps >= self.growth_interval:
                self.scale_value *= self.growth_factor
                self._clean_steps = 0
        if not math.isfinite(self.scale_value) or self.scale_value <= 0:
            raise RuntimeError(f"GradScaler: the loss scale became {self.scale_value}")
        self._found_inf = False
        self._unscaled.clear()

    def get_scale(self) -> float:
        return self.scale_value

    def state_dict(self) -> dict:
        return {
            "scale": self.scale_value,
            "growth_factor": self.growth_factor,
            "backoff_factor": self.backoff_factor,
            "growth_interval": self.growth_interval,
            "_growth_tracker": self._clean_steps,
        }

    def load_state_dict(self, state: dict) -> None:
        self.scale_value = float(state["scale"])
        self.growth_factor = state["growth_factor"]
        self.backoff_factor = state["backoff_factor"]
        self.growth_interval = state["growth_interval"]
        self._clean_steps = int(state["_growth_tracker"])
