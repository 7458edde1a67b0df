"""What a tensor says about its layout and memory (``is_sparse``, ``is_pinned()``,
``is_inference()``, ...), and the requests about memory that have no effect here
(``share_memory_``, ``pin_memory``), and strides given to ``empty_strided``.

Every tensorweaver tensor is dense, strided, not quantized, not nested and not in
page-locked memory, which the backends do not expose. ``pin_memory()`` returns a copy, as
PyTorch's does (PyTorch's raises where no accelerator exists); the copy's ``is_pinned()`` is
False.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensorweaver.memory_formats import preserved_order
from tensorweaver.tensor import Tensor


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` is an inference tensor: made inside ``tw.inference_mode()``, or a
    view or ``detach()`` of one (a view is one where its base is, wherever it was made, as
    in PyTorch)."""
    t = input
    while True:
        view = t._view_of
        if view is not None:
            t = view[0]
        elif t._alias_of is not None:
            t = t._alias_of
        else:
            return t._inference


def is_distributed(input: Tensor) -> bool:
    return False


def to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """``self`` (already dense), or a copy cast to ``dtype``."""
    return self if dtype is None or dtype is self.dtype else self.to(dtype)


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def is_pinned(self: Tensor, device: Any = None) -> bool:
    return False


def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    return self.clone()


def share_memory_(self: Tensor) -> Tensor:
    """``self``: worker processes get tensors through ``tw.utils.data``'s own transport."""
    return self


def dense_dim(self: Tensor) -> int:
    return self.ndim


def dim_order(self: Tensor, *, ambiguity_check: Any = False) -> tuple[int, ...]:
    """The dimensions from outermost to innermost in memory (by decreasing stride)."""
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def const_data_ptr(self: Tensor) -> int:
    return self.data_ptr()


def record_stream(self: Tensor, stream: Any) -> None:
    """Nothing to do: the backends order their work themselves (PyTorch's CUDA caching
    allocator needs to know which streams use a tensor's memory)."""


def check_strides(size: Sequence[int], stride: Sequence[int], fn: str) -> tuple[int, ...]:
    """``size`` as a tuple, once ``stride`` has one entry per dimension of it, as PyTorch
    requires."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(
            f"{fn}: dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)}), got size {list(size)} and stride {list(stride)}"
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"{fn}: negative strides are not supported, got stride {list(stride)}; flip() the "
            "tensor instead"
        )
    return size


def empty_strided_as(
    make: Callable[[tuple[int, ...]], Tensor], size: Sequence[int], stride: Sequence[int], fn: str
) -> Tensor:
    """``make(shape)`` laid out with ``stride`` where that is a dense layout in some axis
    order (a transposed or channels-last one: its ``stride()`` is then ``stride``); other
    strides (gaps, overlaps) are checked, not kept, and the tensor is row-major."""
    shape = check_strides(size, stride, fn)
    order = preserved_order(shape, tuple(stride))
    if order == tuple(range(len(shape))) or not _dense_in(order, shape, stride):
        return make(shape)
    made = make(tuple(shape[d] for d in order))
    inverse = tuple(order.index(axis) for axis in range(len(shape)))
    out = Tensor(made.backend.permute(made.native, inverse), made.backend, made.dtype)
    return out.requires_grad_() if made.requires_grad else out


def _dense_in(order: tuple[int, ...], shape: tuple[int, ...], stride: Sequence[int]) -> bool:
    """Whether ``stride`` is the row-major layout of ``shape`` taken in axis ``order``."""
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and stride[d] != expected:
            return False
        expected *= shape[d]
    return True


def new_empty_strided(
    self: Tensor,
    size: Sequence[int],
    stride: Sequence[int],
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    def make(shape: tuple[int, ...]) -> Tensor:
        return self.new_empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)

    return empty_strided_as(make, size, stride, "new_empty_strided")


TENSOR_ATTRIBUTES: dict[str, bool] = {
    "is_sparse": False,
    "is_sparse_csr": False,
    "is_quantized": False,
    "is_nested": False,
    "is_mkldnn": False,
    "is_vulkan": False,
    "is_maia": False,
}

TENSOR_METHODS: dict[str, Any] = {
    "is_inference": is_inference,
    "is_same_size": is_same_size,
    "to_dense": to_dense,
    "dense_dim": dense_dim,
    "dim_order": dim_order,
    "const_data_ptr": const_data_ptr,
    "record_stream": record_stream,
    "is_pinned": is_pinned,
    "pin_memory": pin_memory,
    "share_memory_": share_memory_,
    "new_empty_strided": new_empty_strided,
}
