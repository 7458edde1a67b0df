"""Pooling layers in 1, 2 and 3 dimensions (PyTorch's ``torch.nn.modules.pooling``): max,
average, adaptive, power-average, unpooling and fractional max pooling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

IntOrTuple = Union[int, Sequence[int]]
OutputSize = Union[int, None, Sequence[Optional[int]]]


def _ntuple(value: IntOrTuple, n: int) -> tuple[int, ...]:
    return (value,) * n if isinstance(value, int) else tuple(value)


class _MaxPoolNd(Module):
    _fn = ""

    def __init__(
        self,
        kernel_size: IntOrTuple,
        stride: Optional[IntOrTuple] = None,
        padding: IntOrTuple = 0,
        dilation: IntOrTuple = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Union[Tensor, tuple[Tensor, Tensor]]:
        return getattr(F, self._fn)(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, L)``; ``return_indices`` adds the argmax."""

    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, H, W)``; ``return_indices`` adds the argmax."""

    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, D, H, W)``; ``return_indices`` adds the argmax."""

    _fn = "max_pool3d"


class AvgPool1d(Module):
    """Mean over sliding windows of ``(N, C, L)``."""

    def __init__(
        self,
        kernel_size: IntOrTuple,
        stride: Optional[IntOrTuple] = None,
        padding: IntOrTuple = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        # Stored as 1-tuples, as PyTorch does (it shows in repr).
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    """Mean over sliding windows; ``divisor_override`` replaces the window size as the
    divisor."""

    _fn = ""

    def __init__(
        self,
        kernel_size: IntOrTuple,
        stride: Optional[IntOrTuple] = None,
        padding: IntOrTuple = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows of ``(N, C, H, W)``."""

    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """Mean over sliding windows of ``(N, C, D, H, W)``."""

    _fn = "avg_pool3d"


class _AdaptivePoolNd(Module):
    _fn = ""

    def __init__(self, output_size: OutputSize) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Mean pooling of ``(N, C, L)`` to a fixed length ``output_size``."""

    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Mean pooling to a fixed ``output_size`` (an int, a pair, or None for "keep")."""

    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Mean pooling of ``(N, C, D, H, W)`` to a fixed ``output_size``."""

    _fn = "adaptive_avg_pool3d"


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size: OutputSize, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Union[Tensor, tuple[Tensor, Tensor]]:
        return getattr(F, self._fn)(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling of ``(N, C, L)`` to a fixed length ``output_size``."""

    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling of ``(N, C, H, W)`` to a fixed ``output_size``."""

    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling of ``(N, C, D, H, W)`` to a fixed ``output_size``."""

    _fn = "adaptive_max_pool3d"


class _LPPoolNd(Module):
    """``(sum over the window of x ** norm_type) ** (1 / norm_type)``."""

    _fn = ""

    def __init__(
        self,
        norm_type: float,
        kernel_size: IntOrTuple,
        stride: Optional[IntOrTuple] = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling of ``(N, C, L)``."""

    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """Power-average pooling of ``(N, C, H, W)``."""

    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    """Power-average pooling of ``(N, C, D, H, W)``."""

    _fn = "lp_pool3d"


class _MaxUnpoolNd(Module):
    """The partial inverse of max pooling: values go to their pooling indices, zeros
    elsewhere; ``output_size`` in ``forward`` resolves the ambiguous sizes."""

    _fn = ""
    _nd = 0

    def __init__(
        self,
        kernel_size: IntOrTuple,
        stride: Optional[IntOrTuple] = None,
        padding: IntOrTuple = 0,
    ) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def forward(
        self, input: Tensor, indices: Tensor, output_size: Optional[Sequence[int]] = None
    ) -> Tensor:
        return getattr(F, self._fn)(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of ``MaxPool1d`` (``(N, C, L)``)."""

    _fn = "max_unpool1d"
    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of ``MaxPool2d`` (``(N, C, H, W)``)."""

    _fn = "max_unpool2d"
    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of ``MaxPool3d`` (``(N, C, D, H, W)``)."""

    _fn = "max_unpool3d"
    _nd = 3


class _FractionalMaxPoolNd(Module):
    """Max pooling over pseudo-randomly spaced windows to ``output_size`` or ``output_ratio``
    of the input size (exactly one of them)."""

    _fn = ""
    _nd = 0

    def __init__(
        self,
        kernel_size: IntOrTuple,
        output_size: Optional[IntOrTuple] = None,
        output_ratio: Union[float, Sequence[float], None] = None,
        return_indices: bool = False,
        _random_samples: Optional[Tensor] = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"{name} requires specifying either an output size, or a pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be specified")
        self.output_size = None if output_size is None else _ntuple(output_size, self._nd)
        self.output_ratio = None
        if output_ratio is not None:
            ratio = (
                (output_ratio,) * self._nd
                if isinstance(output_ratio, (int, float))
                else output_ratio
            )
            self.output_ratio = tuple(ratio)
            if not all(0 < r < 1 for r in self.output_ratio):
                raise ValueError(
                    f"{name}: output_ratio must be between 0 and 1 (got {output_ratio})"
                )

    def forward(self, input: Tensor) -> Union[Tensor, tuple[Tensor, Tensor]]:
        return getattr(F, self._fn)(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, H, W)``."""

    _fn = "fractional_max_pool2d"
    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of ``(N, C, D, H, W)``."""

    _fn = "fractional_max_pool3d"
    _nd = 3
