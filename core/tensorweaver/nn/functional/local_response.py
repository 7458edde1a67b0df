"""Local response normalization across channels: ``local_response_norm`` and the legacy
``cross_map_lrn2d`` behind ``nn.CrossMapLRN2d``.

Both divide by ``(k + alpha / size * s) ** beta``, where ``s`` sums the squares of a window
of neighbouring channels (axis 1); the windows are rows of a 0/1 band matrix.
"""

from __future__ import annotations

import tensorweaver as tw
from tensorweaver.tensor import Tensor


def _channel_sums(squares: Tensor, band: Tensor) -> Tensor:
    """``sum_j band[c, j] * squares[:, j, ...]`` for every channel ``c``."""
    return (squares.transpose(1, -1) @ band.mT.to(squares.dtype)).transpose(1, -1)


def _band(channels: int, low: Tensor, high: Tensor, device: object) -> Tensor:
    """The ``(C, C)`` 0/1 matrix with row ``c`` set on ``[low[c], high[c]]``."""
    j = tw.arange(channels, device=device)
    return (j >= low) & (j <= high)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """``x / (k + alpha * mean of x**2 over the size channels around) ** beta`` for
    ``(N, C, ...)`` input; the window of channel ``c`` is ``[c - size // 2, c + (size - 1) //
    2]``, zero outside the input."""
    if input.dim() < 3:
        raise ValueError(
            f"local_response_norm: expected 3D or higher dimensionality input (got "
            f"{input.dim()} dimensions, shape {tuple(input.shape)})"
        )
    if size < 1:
        raise RuntimeError(f"local_response_norm: size must be positive, got {size}")
    if input.numel() == 0:
        return input
    c = tw.arange(input.shape[1], device=input.device).reshape(-1, 1)
    band = _band(input.shape[1], c - size // 2, c + (size - 1) // 2, input.device)
    div = (_channel_sums(input * input, band) / size * alpha + k).pow(beta)
    return input / div


def cross_map_lrn2d(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """PyTorch's legacy cross-channel LRN of ``(N, C, H, W)`` input, as it computes it: with
    ``pre = (size - 1) // 2 + 1``, channel ``c`` sums the squares of channel 0 and of channels
    ``[max(1, c - pre + 1), min(C - 1, c + pre - 1)]``."""
    if input.dim() != 4:
        raise ValueError(
            f"CrossMapLRN2d: expected a 4D input (N, C, H, W), got shape {tuple(input.shape)}"
        )
    channels = input.shape[1]
    pre = (size - 1) // 2 + 1
    c = tw.arange(channels, device=input.device).reshape(-1, 1)
    band = _band(channels, (c - pre + 1).clamp(min=1), c + pre - 1, input.device)
    band = band | (tw.arange(channels, device=input.device) == 0)
    scale = _channel_sums(input * input, band) * (alpha / size) + k
    return input * scale.pow(-beta)
