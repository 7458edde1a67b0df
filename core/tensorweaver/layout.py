"""``tw.strided``, ``tw.sparse_coo``: PyTorch's memory-layout objects (``Tensor.layout``).
Every tensor here is stored strided; a ``sparse=True`` lookup's gradient reports
``sparse_coo`` as PyTorch's does (nn/functional/sparse.py), with dense storage."""

from __future__ import annotations


class layout:  # noqa: N801  (PyTorch's class name)
    """A memory layout, printed as PyTorch prints ``torch.strided``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tensorweaver.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")
