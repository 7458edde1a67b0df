"""``Tensor.unfold(dimension, size, step)``: every window of ``size`` elements along
``dimension``, ``step`` apart, as a new last dimension (PyTorch's sliding-window view; here
a gather, differentiable, that copies)."""

from __future__ import annotations

from tensorweaver.contract import dtypes
from tensorweaver.ops import creation as cr
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    axis = _axis(dimension, input.ndim, "unfold") if input.ndim else 0
    length = input.shape[axis] if input.ndim else 1
    if size > length:
        raise RuntimeError(
            f"maximum size for tensor at dimension {axis} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.ndim == 0:
        return mv.reshape(input, (size,))
    count = (length - size) // step + 1
    starts = mv.reshape(cr.arange(0, count * step, step, dtype=dtypes.int64, device=input), (-1, 1))
    offsets = mv.reshape(cr.arange(size, dtype=dtypes.int64, device=input), (1, -1))
    positions = mv.reshape(starts + offsets, (-1,))
    windows = ix.take_along(input, axis, positions)  # dimension axis: count * size
    shape = input.shape[:axis] + (count, size) + input.shape[axis + 1 :]
    return mv.movedim(mv.reshape(windows, shape), axis + 1, -1)
