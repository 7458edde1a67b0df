"""``convert_conv2d_weight_memory_format`` and ``convert_conv3d_weight_memory_format``:
lay the weights of every (transposed) convolution of a module out in a memory format."""

from __future__ import annotations

from typing import Any, TypeVar

from tensorweaver.nn.modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from tensorweaver.nn.modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

M = TypeVar("M", bound=Module)


def _convert(module: M, memory_format: Any, kinds: tuple[type, ...]) -> M:
    # The values stay; only the layout the weights ask of the backend changes.
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().contiguous(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: M, memory_format: Any) -> M:
    """Every ``Conv2d``/``ConvTranspose2d`` weight in ``module`` (itself included) made
    contiguous in ``memory_format`` (e.g. ``tw.channels_last``); returns ``module``."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: M, memory_format: Any) -> M:
    """Every ``Conv3d``/``ConvTranspose3d`` weight in ``module`` (itself included) made
    contiguous in ``memory_format`` (e.g. ``tw.channels_last_3d``); returns ``module``."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
