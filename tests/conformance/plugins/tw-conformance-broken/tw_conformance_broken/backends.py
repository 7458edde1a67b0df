"""The broken backend objects: NumPy's backend with one thing wrong each."""

from __future__ import annotations

from typing import Any

import numpy as np
from tensorweaver.contract import DeviceRecord
from tensorweaver_numpy.backend import NumpyBackend


class WrongGradient(NumpyBackend):
    """fused_softmax_backward forgets the ``- y * sum(g * y)`` term."""

    def fused_softmax_backward(self, saved: tuple, grad: np.ndarray, needs: tuple) -> tuple:
        y, _ = saved
        return (grad * y,)


class DroppedDtype(NumpyBackend):
    """exp returns float32 for float64 input."""

    def exp(self, a: np.ndarray) -> np.ndarray:
        out = super().exp(a)
        return out.astype(np.float32) if out.dtype == np.float64 else out


class WithGap(NumpyBackend):
    """nonzero refuses 0-d arrays: a gap its plugin declares."""

    def nonzero(self, a: np.ndarray) -> np.ndarray:
        if np.ndim(a) == 0:
            raise NotImplementedError("nonzero of a 0-d array")
        return super().nonzero(a)


class CStyleRemainder(NumpyBackend):
    """remainder of signed integers takes the dividend's sign (C's %), not the divisor's."""

    def remainder(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype.kind == "i":
            return np.fmod(a, b)
        return super().remainder(a, b)


class Partial:
    """NumPy's backend without remainder and erf, as a plugin built one primitive at a time
    is: the two are simply not there."""

    MISSING = ("remainder", "erf")

    def __init__(self, device: DeviceRecord) -> None:
        self._numpy = NumpyBackend(device)

    def __getattr__(self, name: str) -> Any:
        if name in self.MISSING:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
            )
        return getattr(self._numpy, name)


class NoDevice:
    """A backend whose creation fails (the device cannot be opened)."""

    def __init__(self, device: DeviceRecord) -> None:
        raise RuntimeError(f"cannot open {device.name}: no device handle")
