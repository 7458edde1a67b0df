"""Padding layers (PyTorch's ``torch.nn.modules.padding``): constant (and zero), reflection,
replication and circular padding of the last 1, 2 or 3 axes, on top of ``F.pad``.

``padding`` is an int (every side) or ``2 * n`` ints ``(left, right, top, bottom, front,
back)``, last axis first; negative widths crop, as ``F.pad`` allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

Padding = Union[int, Sequence[int]]


class _PadNd(Module):
    """Pads the last ``_nd`` axes of ``(N, C, ...)`` or unbatched ``(C, ...)`` inputs with
    ``F.pad``'s ``_mode``."""

    _nd = 0
    _mode = ""

    def __init__(self, padding: Padding) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self._nd) if isinstance(padding, int) else tuple(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    _mode = "constant"

    def __init__(self, padding: Padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last axis with ``value``."""

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two axes with ``value``."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three axes with ``value``."""

    _nd = 3


class _ZeroPad:
    """Constant padding with zeros (mixed in before a ``ConstantPad*d``)."""

    def __init__(self, padding: Padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pads the last axis with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pads the last two axes with zeros."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pads the last three axes with zeros."""


class ReflectionPad1d(_PadNd):
    """Pads the last axis with its reflection (the edge not repeated)."""

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two axes with their reflection."""

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last three axes with their reflection."""

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last axis by repeating its edge values."""

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two axes by repeating their edge values."""

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last three axes by repeating their edge values."""

    _nd, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (self._nd + 1, self._nd + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {self._nd + 1}D or {self._nd + 2}D input "
                f"(got {input.dim()}D input of shape {tuple(input.shape)})"
            )
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pads the last axis by wrapping around."""

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last two axes by wrapping around."""

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last three axes by wrapping around."""

    _nd = 3
