"""The broken backend objects: NumPy's backend with one thing wrong each."""

from __future__ import annotations

import numpy as np
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
