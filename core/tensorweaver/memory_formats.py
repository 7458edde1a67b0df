"""``tw.channels_last`` and PyTorch's other memory-format objects (``tw.memory_format``),
for the ``memory_format=`` arguments scripts pass. Every tensor here is laid out densely in
row-major order; the formats name PyTorch's layouts so that such scripts run unchanged."""

from __future__ import annotations


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
