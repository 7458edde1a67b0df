"""``tw.channels_last`` and PyTorch's other memory-format objects (``tw.memory_format``),
for the ``memory_format=`` arguments scripts pass: ``contiguous``, ``clone``, ``to`` and the
``*_like`` functions lay a tensor out in the channels-last orders as PyTorch does (the
strides ``stride()`` and ``is_contiguous(memory_format=...)`` report), where the backend
reports strides."""

from __future__ import annotations

from typing import Any


class memory_format:  # noqa: N801  (PyTorch's class name)
    """A memory format, printed as PyTorch prints ``torch.channels_last``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tensorweaver.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module-level object of that name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def channels_last_order(memory_format: Any, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The axes of a tensor of ``shape`` from outermost to innermost in memory in
    ``memory_format`` where it is a channels-last format (channels innermost), else None;
    PyTorch's error where the rank is not the format's."""
    name = getattr(memory_format, "name", None)
    rank = {"channels_last": 4, "channels_last_3d": 5}.get(name)
    if rank is None:
        return None
    if len(shape) != rank:
        raise RuntimeError(
            f"required rank {rank} tensor to use {name} format, got a tensor of shape {list(shape)}"
        )
    return (0, *range(2, rank), 1)
