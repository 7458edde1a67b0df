"""``tw.strided``: PyTorch's memory-layout objects (``Tensor.layout``). Every tensor here is
strided: there are no sparse or MKL-DNN layouts."""

from __future__ import annotations


class layout:  # noqa: N801  (PyTorch's class name)
    """A memory layout, printed as PyTorch prints ``torch.strided``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tensorweaver.{self.name}"


strided = layout("strided")
