"""``tw.channels_last`` and PyTorch's other memory-format objects (``tw.memory_format``),
for the ``memory_format=`` arguments scripts pass: ``contiguous``, ``clone``, ``to`` and the
``*_like`` functions lay a tensor out in the channels-last orders as PyTorch does (the
strides ``stride()`` and ``is_contiguous(memory_format=...)`` report), where the backend
reports strides."""

from __future__ import annotations

import math
import operator
from typing import Any

from tensorweaver.contract.cpu_loops import loop_order


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


def preserved_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """The axes from outermost to innermost in which PyTorch's ``preserve_format`` lays out a
    new tensor like one of ``shape`` and ``strides`` (its ``infer_dense_strides``: a stable
    insertion sort by stride, zero strides kept in place, equal strides the smaller size
    innermost: TensorIterator's sort of one operand, the contract's ``loop_order``), so that a
    stepped channels-last view's ``clone()`` stays channels-last."""
    return loop_order(shape, (strides,))


def suggested_format(shape: tuple[int, ...], strides: tuple[int, ...]) -> str:
    """PyTorch's ``suggest_memory_format`` of a tensor of ``shape`` and ``strides``: the name
    of the channels-last format its strides look like (4-d or 5-d), else
    ``contiguous_format``."""
    rank = len(shape)
    if rank not in (4, 5) or strides[1] == 0:
        return "contiguous_format"
    least = 0
    for d in (1, *range(rank - 1, 1, -1), 0):
        if shape[d] == 0 or strides[d] < least or (d == 0 and least == strides[1]):
            return "contiguous_format"
        least = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return "channels_last" if rank == 4 else "channels_last_3d"


def laid_out(backend: Any, native: Any, order: tuple[int, ...]) -> Any:
    """``native``'s values in a new array, row-major in the axis order ``order`` (outermost
    first) and seen in the logical order again (the backend's ``contiguous``; without one,
    ``native`` itself)."""
    make = getattr(backend, "contiguous", None)
    if make is None:
        return native
    identity = order == tuple(range(len(order)))
    made = make(native if identity else backend.permute(native, order))
    shape = tuple(native.shape)
    if 1 in shape:  # (a row-major array may keep any stride on a size-1 axis: reshaped, C's)
        made = backend.reshape(backend.reshape(made, (math.prod(shape),)), tuple(made.shape))
    if identity:
        return made
    return backend.permute(made, tuple(order.index(axis) for axis in range(len(order))))


def c_ordered(native: Any) -> bool:
    """Whether ``native`` is C-ordered as its type tells cheaply (False where it cannot)."""
    kind = type(native)
    test = C_TESTS[kind] if kind in C_TESTS else c_test(kind)
    return test is not None and bool(test(native))


#: :func:`c_test` of each array type met so far.
C_TESTS: dict[type, Any] = {}


def c_test(kind: type) -> Any:
    """For arrays of type ``kind``, a test of C order that copies nothing (NumPy's flag,
    torch's ``is_contiguous``: exactly when their backends' ``contiguous`` returns the array
    itself), else None; remembered in :data:`C_TESTS`."""
    name = f"{kind.__module__}.{kind.__qualname__}"
    test = None
    if name == "numpy.ndarray":
        test = operator.attrgetter("flags.c_contiguous")
    elif any(f"{k.__module__}.{k.__qualname__}" == "torch.Tensor" for k in kind.__mro__):
        # (its subclasses too: torch.export's FakeTensor has no data pointer, which the
        # layout a stride reads would need)
        test = kind.is_contiguous  # (the unbound method: a methodcaller costs 3x more)
    C_TESTS[kind] = test
    return test


def takes_writes(native: Any) -> bool:
    """Whether host memory shared as ``native`` takes writes (a read-only NumPy array's does
    not: a tensor over it then takes an array of its own)."""
    flags = getattr(native, "flags", None)
    return flags is None or bool(getattr(flags, "writeable", True))
