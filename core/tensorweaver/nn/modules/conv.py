"""Convolution layers: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` and their lazy forms,
whose ``in_channels`` comes from the first input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.lazy import LazyModuleMixin, UninitializedParameter
from tensorweaver.nn.modules.linear import _reset_uniform_by_fan_in
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_PADDING_STRINGS = ("same", "valid")

IntOrTuple = Union[int, Sequence[int]]


def _ntuple(value: IntOrTuple, n: int, name: str) -> tuple[int, ...]:
    """``value`` repeated to an ``n``-tuple, or checked to have ``n`` entries."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


class _ConvNd(Module):
    """Shared state of N-d (transposed) convolutions: arguments checked and stored as tuples,
    the weight ``(out, in/groups, *k)`` (``(in, out/groups, *k)`` when transposed)."""

    _n: int = 0  # spatial dimensions, set by subclasses

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple,
        padding: Union[str, IntOrTuple],
        dilation: IntOrTuple,
        transposed: bool,
        output_padding: IntOrTuple,
        groups: int,
        bias: bool,
        padding_mode: str,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})"
            )
        if out_channels % groups:
            raise ValueError(
                f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"{name}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        n = self._n
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(
                    f"{name}: invalid padding string {padding!r}, should be one of "
                    f"{_PADDING_STRINGS}"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(
                    f"{name}: padding='same' is not supported for strided convolutions "
                    f"(stride={self.stride}); give explicit padding instead"
                )
            self.padding: Union[str, tuple[int, ...]] = padding
        else:
            self.padding = _ntuple(padding, n, "padding")
        if transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(tw.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(tw.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_uniform_by_fan_in(self.weight, self.bias)

    def _pad_pairs(self) -> list[int]:
        """``F.pad`` amounts (last dim first, each dim's (left, right)) for non-zero padding
        modes, where the convolution itself then pads nothing."""
        pairs: list[int] = []
        for i in reversed(range(self._n)):
            if self.padding == "valid":
                left = right = 0
            elif self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                left, right = total // 2, total - total // 2
            else:
                left = right = self.padding[i]
            pairs += [left, right]
        return pairs

    def extra_repr(self) -> str:
        n = self._n
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """A forward (not transposed) convolution."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: Union[str, IntOrTuple] = 0,
        dilation: IntOrTuple = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _conv_forward(self, input: Tensor, conv: Callable[..., Tensor]) -> Tensor:
        padding = self.padding
        if self.padding_mode != "zeros":
            input = F.pad(input, self._pad_pairs(), mode=self.padding_mode)
            padding = 0
        return conv(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)`` (or unbatched ``(C_in, L)``) inputs."""

    _n = 1

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)`` (or unbatched ``(C_in, H, W)``) inputs."""

    _n = 2

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)`` (or unbatched ``(C_in, D, H, W)``) inputs."""

    _n = 3

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, F.conv3d)


class _ConvTranspose(_ConvNd):
    """A transposed convolution (the gradient of a convolution with respect to its input)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        output_padding: IntOrTuple = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: IntOrTuple = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(
                f'Only "zeros" padding mode is supported for {name}, got {padding_mode!r}'
            )
        if isinstance(padding, str):
            raise ValueError(f"{name} does not accept string padding; give ints")
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def _output_padding(
        self, input: Tensor, output_size: Optional[Sequence[int]]
    ) -> tuple[int, ...]:
        """The output_padding that yields ``output_size`` (else the configured one)."""
        if output_size is None:
            return self.output_padding
        n = self._n
        name = type(self).__name__
        output_size = list(output_size)
        # n spatial sizes, or the whole output shape (with its batch and channel axes).
        if len(output_size) not in (n, input.dim()):
            raise ValueError(
                f"{name}: for {input.dim()}-D input, output_size must have {n} or "
                f"{input.dim()} elements, got {len(output_size)}"
            )
        output_size = output_size[-n:]
        spatial = tuple(input.shape)[-n:]
        result = []
        for d in range(n):
            smallest = (
                (spatial[d] - 1) * self.stride[d]
                - 2 * self.padding[d]
                + self.dilation[d] * (self.kernel_size[d] - 1)
                + 1
            )
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(
                    f"{name}: requested output size {output_size} is not reachable "
                    f"from input spatial size {spatial}; dimension {d} must lie in "
                    f"[{smallest}, {largest}]"
                )
            result.append(output_size[d] - smallest)
        return tuple(result)

    def _conv_transpose_forward(
        self, input: Tensor, output_size: Optional[Sequence[int]], conv: Callable[..., Tensor]
    ) -> Tensor:
        return conv(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution over ``(N, C_in, L)`` (or unbatched) inputs."""

    _n = 1

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        return self._conv_transpose_forward(input, output_size, F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution over ``(N, C_in, H, W)`` (or unbatched) inputs."""

    _n = 2

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        return self._conv_transpose_forward(input, output_size, F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution over ``(N, C_in, D, H, W)`` (or unbatched) inputs."""

    _n = 3

    def forward(self, input: Tensor, output_size: Optional[Sequence[int]] = None) -> Tensor:
        return self._conv_transpose_forward(input, output_size, F.conv_transpose3d)


class _LazyConvMixin(LazyModuleMixin):
    """A convolution whose ``in_channels`` is the channel count of its first input."""

    _n: int
    groups: int
    transposed: bool

    def _uninitialized(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        """Made with in_channels 0: the real out_channels and parameters without a shape."""
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        name = type(self).__name__
        if input.dim() not in (self._n + 1, self._n + 2):
            raise RuntimeError(
                f"{name}: expected a {self._n + 1}-D (unbatched) or {self._n + 2}-D (batched) "
                f"input, got shape {tuple(input.shape)}"
            )
        in_channels = input.shape[input.dim() - self._n - 1]
        if in_channels % self.groups:
            raise ValueError(
                f"{name}: in_channels ({in_channels}) of the input of shape "
                f"{tuple(input.shape)} must be divisible by groups ({self.groups})"
            )
        self.in_channels = in_channels
        o, g = self.out_channels, self.groups
        if self.transposed:
            shape = (in_channels, o // g, *self.kernel_size)
        else:
            shape = (o, in_channels // g, *self.kernel_size)
        with tw.no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((o,))
            self.reset_parameters()


class _LazyConv(_LazyConvMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: Union[str, IntOrTuple] = 0,
        dilation: IntOrTuple = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._uninitialized(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(
        self,
        out_channels: int,
        kernel_size: IntOrTuple,
        stride: IntOrTuple = 1,
        padding: IntOrTuple = 0,
        output_padding: IntOrTuple = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: IntOrTuple = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
            padding_mode,
        )  # fmt: skip
        self._uninitialized(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose3d
