"""``Parameter``: a tensor that a Module registers as one of its learnable weights;
``Buffer``, one it registers as state; the uninitialized parameters and buffers of lazy
layers (``UninitializedParameter``, ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor with ``requires_grad=True`` (by default) that ``Module.__setattr__``
    registers. It shares ``data``'s memory (an in-place change of either reaches the other);
    results of operations on it are plain Tensors."""

    __slots__ = ()

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        if data is None:
            data = tw.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter: data must be a tw.Tensor, got {type(data).__name__}; "
                "wrap arrays with tw.tensor(...) first"
            )
        super().__init__(data.native, data.backend, data.dtype)
        self._share_memory_of(data)  # as PyTorch's, in-place changes of either reach the other
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]


class Buffer(Tensor):
    """A tensor that ``Module.__setattr__`` registers as a buffer (``self.x =
    nn.Buffer(t)``, PyTorch 2.x): state that is not a parameter, in ``state_dict`` unless
    ``persistent=False``. It shares ``data``'s memory, as PyTorch's ``data.detach()`` does,
    and takes its ``requires_grad``."""

    __slots__ = ("persistent",)

    def __init__(self, data: Optional[Tensor] = None, *, persistent: bool = True) -> None:
        if data is None:
            data = tw.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Buffer: data must be a tw.Tensor, got {type(data).__name__}; wrap arrays "
                "with tw.tensor(...) first"
            )
        super().__init__(data.native, data.backend, data.dtype)
        self._share_memory_of(data)
        self.requires_grad_(data.requires_grad)
        self.persistent = persistent


class UninitializedTensorMixin:
    """A tensor without a shape yet (no elements: only the device and dtype it will have);
    :meth:`materialize` gives it one and turns it into ``cls_to_become``, the same object.
    Moving or casting it (``to``, ``double``, ``cuda``, ...) keeps it uninitialized."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape: Sequence[int], device: Any = None, dtype: Any = None) -> None:
        """Give the tensor ``shape`` (uninitialized values, as ``tw.empty``), on ``device``
        and of ``dtype`` (by default its own)."""
        self.data = tw.empty(  # type: ignore[misc]
            (shape,) if isinstance(shape, int) else tuple(shape),  # torch takes an int too
            device=self.device if device is None else device,  # type: ignore[attr-defined]
            dtype=self.dtype if dtype is None else dtype,  # type: ignore[attr-defined]
        )
        self.__class__ = self.cls_to_become

    def _still_lazy(self, moved: Tensor) -> Tensor:
        if moved is self:
            return moved
        return type(self)(self.requires_grad, moved.device, moved.dtype)  # type: ignore

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)  # type: ignore
        return memo[id(self)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _keeps_lazy(name: str) -> Any:
    def method(self: UninitializedTensorMixin, *args: Any, **kwargs: Any) -> Tensor:
        return self._still_lazy(getattr(Tensor, name)(self, *args, **kwargs))

    method.__name__ = name
    return method


# PyTorch's list of what an uninitialized tensor allows: moves and casts.
for _name in ("to", "cpu", "cuda", "type", "half", "bfloat16", "float", "double"):
    setattr(UninitializedTensorMixin, _name, _keeps_lazy(_name))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy layer before its first forward; materialized, it is a plain
    :class:`Parameter` (the same object, so optimizers built before keep it)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(tw.empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a lazy layer (``running_mean``, ...) before its first forward; materialized,
    it is a plain :class:`Tensor`."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        data = tw.empty(0, device=device, dtype=dtype)
        super().__init__(data.native, data.backend, data.dtype)
        self.requires_grad_(requires_grad)


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an :class:`UninitializedParameter` or :class:`UninitializedBuffer`."""
    return isinstance(param, UninitializedTensorMixin)
