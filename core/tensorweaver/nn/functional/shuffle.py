"""Channel rearrangements: ``pixel_shuffle``, ``pixel_unshuffle``, ``channel_shuffle``."""

from __future__ import annotations

from tensorweaver.nn.functional.conv import kernel_layout
from tensorweaver.ops.apply import labelled
from tensorweaver.tensor import Tensor


def _check_factor(value: int, what: str, fn: str) -> None:
    if value <= 0:
        raise RuntimeError(f"{fn}: {what} must be positive, got {value}")


def _layout_as(out: Tensor, input: Tensor, ranks: tuple[int, ...]) -> Tensor:
    """``out`` laid out as torch's CPU kernel lays it out: channels-last where the input of
    one of ``ranks`` suggests it (C order otherwise, and for other ranks)."""
    return kernel_layout(out, input) if input.dim() in ranks else out


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r * r, H, W)`` to ``(*, C, H * r, W * r)``: each group of ``r * r`` channels
    becomes an ``r x r`` block of pixels."""
    fn, r = "pixel_shuffle", upscale_factor
    _check_factor(r, "upscale_factor", fn)
    if input.dim() < 3 or input.shape[-3] % (r * r):
        raise RuntimeError(
            f"{fn}: expected an input of shape (*, C * {r * r}, H, W) (at least 3-D, channels "
            f"divisible by upscale_factor squared), got shape {tuple(input.shape)}"
        )
    *batch, c, h, w = input.shape
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    k = len(batch)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    out = _layout_as(x.reshape(*batch, c // (r * r), h * r, w * r), input, (4,))
    return labelled(out, "PixelShuffleBackward0", input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` to ``(*, C * r * r, H, W)``: the inverse of
    :func:`pixel_shuffle`."""
    fn, r = "pixel_unshuffle", downscale_factor
    _check_factor(r, "downscale_factor", fn)
    if input.dim() < 3 or input.shape[-2] % r or input.shape[-1] % r:
        raise RuntimeError(
            f"{fn}: expected an input of shape (*, C, H, W) (at least 3-D) with H and W "
            f"divisible by downscale_factor {r}, got shape {tuple(input.shape)}"
        )
    *batch, c, h, w = input.shape
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    k = len(batch)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    out = _layout_as(x.reshape(*batch, c * r * r, h // r, w // r), input, (4,))
    return labelled(out, "PixelUnshuffleBackward0", input)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``(N, C, *)`` with its channels, seen as ``groups`` rows of ``C / groups``, read by
    column: the channels of each group spread over all groups."""
    fn = "channel_shuffle"
    _check_factor(groups, "groups", fn)
    if input.dim() < 3 or input.shape[1] % groups:
        raise RuntimeError(
            f"{fn}: expected an input of shape (N, C, *) (at least 3-D) with C divisible by "
            f"groups={groups}, got shape {tuple(input.shape)}"
        )
    n, c, *rest = input.shape
    x = input.reshape(n, groups, c // groups, *rest).transpose(1, 2)
    return _layout_as(x.reshape(n, c, *rest), input, (4, 5))


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """:func:`channel_shuffle` under the name of PyTorch's kernel."""
    return channel_shuffle(input, groups)
