"""``Parameter``: a tensor that a Module registers as one of its learnable weights;
``Buffer``, one it registers as state; the uninitialized parameters and buffers of lazy
layers (``UninitializedParameter``, ...)."""

from __future__ import annotations

import contextlib
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, Optional

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


#: ``persistent`` of each tensor a Buffer made, by ``id`` (dropped when it is collected):
#: PyTorch's attribute on that tensor (``Tensor.persistent`` reads it). Kept off the tensor's
#: layout, so that ``Buffer(t)`` and a materialized UninitializedBuffer are plain Tensors.
_PERSISTENT: dict[int, bool] = {}
#: ``id`` of each tensor a Buffer made: a plain one (``Buffer(t)``, a materialized
#: UninitializedBuffer) is a Buffer to ``isinstance``, as PyTorch's flag on its tensor.
_MADE_AS_BUFFER: set[int] = set()


def persistent_of(t: Tensor) -> bool:
    """``t.persistent``: the flag a Buffer gave it; AttributeError for a tensor no Buffer
    made, as PyTorch's (an attribute only its Buffer sets)."""
    found = _PERSISTENT.get(id(t))
    if found is None:
        raise AttributeError(f"'{type(t).__name__}' object has no attribute 'persistent'")
    return found


def set_persistent(t: Tensor, value: bool) -> None:
    """``t.persistent = value``, kept while ``t`` lives."""
    key = id(t)
    if key not in _PERSISTENT:
        weakref.finalize(t, _forget_buffer, key)
    _PERSISTENT[key] = value


def copy_buffer_flags(t: Tensor, copy: Tensor) -> None:
    """Give ``copy`` (a deepcopy of ``t``) ``t``'s Buffer flags, as PyTorch copies a
    tensor's attributes."""
    key = id(t)
    if key in _PERSISTENT:
        set_persistent(copy, _PERSISTENT[key])
        if key in _MADE_AS_BUFFER:
            _MADE_AS_BUFFER.add(id(copy))


class _BufferMeta(type):
    """``Buffer(t)`` is a plain Tensor that ``isinstance(t, Buffer)`` accepts, as PyTorch's
    (a plain tensor with a flag); a subclass (UninitializedBuffer) makes its own instances."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        made = super().__call__(*args, **kwargs)
        if cls is Buffer:
            made.__class__ = Tensor  # (same layout: Buffer adds no slot)
        return made

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer and type(instance) is Tensor and id(instance) in _MADE_AS_BUFFER:
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that ``Module.__setattr__`` registers as a buffer (``self.x =
    nn.Buffer(t)``, PyTorch 2.x): state that is not a parameter, in ``state_dict`` unless
    ``persistent=False``. It shares ``data``'s memory, as PyTorch's ``data.detach()`` does,
    and takes its ``requires_grad``. ``Buffer(t)`` returns a plain Tensor, as PyTorch's; its
    ``persistent`` is ``Tensor.persistent``."""

    __slots__ = ()

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
        set_persistent(self, persistent)
        _MADE_AS_BUFFER.add(id(self))  # (a materialized UninitializedBuffer stays one too)


def _forget_buffer(key: int) -> None:
    _PERSISTENT.pop(key, None)
    _MADE_AS_BUFFER.discard(key)


#: The storage and shape slots of every tensor, which the uninitialized ones hide.
_NATIVE, _SHAPE = Tensor.__dict__["native"], Tensor.__dict__["_shape"]  # (the slots)
#: How deep this thread is in an operation an uninitialized tensor allows (see _allowed).
_ALLOWED = threading.local()


@contextlib.contextmanager
def _allowed() -> Iterator[None]:
    """Let uninitialized tensors show their (empty) storage and shape inside the block."""
    _ALLOWED.depth = getattr(_ALLOWED, "depth", 0) + 1
    try:
        yield
    finally:
        _ALLOWED.depth -= 1


def _is_allowed() -> bool:
    return getattr(_ALLOWED, "depth", 0) > 0


#: The core's modules that copy PyTorch's Python code and read ``shape`` where it does
#: (Module.load_state_dict, parametrizations): RuntimeError there, as PyTorch's ``shape``
#: property raises.
_PYTHON_CODE = frozenset({"tensorweaver.nn.modules.module", "tensorweaver.nn.utils.parametrize"})


def _caller() -> str:
    """The module of the code that called the caller of this function."""
    return sys._getframe(2).f_globals.get("__name__", "")


def _refuse_shape(t: Any, caller: str) -> NoReturn:
    """Refuse a read of uninitialized ``t``'s shape by code of the module ``caller``: an
    operation of the core's (ValueError, as PyTorch's ``__torch_function__`` refuses any
    operation), else the user or Module code (RuntimeError, PyTorch's ``shape``)."""
    if caller.startswith("tensorweaver.") and caller not in _PYTHON_CODE:
        t.native  # noqa: B018 - ValueError
    raise RuntimeError(
        "Can't access the shape of an uninitialized parameter or buffer "
        f"({type(t).__name__}). This happens with a LazyModule, or in load_state_dict "
        "loading an uninitialized parameter into an initialized one: call forward (with a "
        "dummy batch) to initialize the parameters first"
    )


class UninitializedTensorMixin:
    """A tensor without a shape yet (no elements: only the device and dtype it will have);
    :meth:`materialize` gives it one and turns it into ``cls_to_become``, the same object.

    As PyTorch's, it allows only facts (``dtype``, ``device``, ``requires_grad``, ``ndim``,
    ``size()``, ``data``, ...), ``copy_`` and moves and casts (``to``, ``cpu``, ``cuda``,
    ``half``, ``float``, ``double``, ``char``, ``short``, ``int``, ``long``); reading
    ``shape`` raises RuntimeError and any other operation ValueError (every operation reads
    the tensor's storage or shape, which are hidden here)."""

    __slots__ = ()
    cls_to_become: type = Tensor

    @property
    def native(self) -> Any:
        if _is_allowed():
            return _NATIVE.__get__(self, Tensor)
        raise ValueError(
            f"Attempted to use an uninitialized parameter ({type(self).__name__}) in an "
            "operation that needs its values or shape. This happens with a LazyModule (or an "
            "explicit tw.nn.parameter." + type(self).__name__ + "): call its forward with a "
            "dummy batch first, which gives the parameters their shapes"
        )

    @native.setter
    def native(self, value: Any) -> None:
        _NATIVE.__set__(self, value)

    @property
    def shape(self) -> Any:
        if _is_allowed():
            return _SHAPE.__get__(self, Tensor)
        _refuse_shape(self, _caller())

    @property
    def nbytes(self) -> int:
        return 0  # (as PyTorch's: the bytes of no data)

    @property
    def ndim(self) -> int:
        return len(_SHAPE.__get__(self, Tensor))  # as PyTorch: 1, the shape of no data

    @property
    def data(self) -> Tensor:
        with _allowed():
            return Tensor.data.__get__(self, Tensor)  # type: ignore[attr-defined]

    @data.setter
    def data(self, value: Tensor) -> None:
        with _allowed():
            Tensor.data.__set__(self, value)  # type: ignore[attr-defined]

    def _set_requires_grad(self, requires_grad: bool) -> None:
        with _allowed():  # (PyTorch's __torch_function__ lets attribute setters through)
            Tensor._set_requires_grad(self, requires_grad)  # type: ignore[arg-type]

    requires_grad = Tensor.requires_grad.setter(_set_requires_grad)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not _is_allowed():
            self.native  # noqa: B018 - refused as PyTorch refuses it
        return Tensor.requires_grad_(self, requires_grad)  # type: ignore[arg-type]

    def _check_inplace(self) -> None:
        if not _is_allowed():  # (PyTorch refuses the operation before autograd's checks run)
            self.native  # noqa: B018 - ValueError
        Tensor._check_inplace(self)  # type: ignore[arg-type]

    def share_memory_(self) -> Tensor:
        raise RuntimeError(
            "Can't share memory on an uninitialized parameter or buffer "
            f"({type(self).__name__}); call forward (with a dummy batch) to initialize the "
            "parameters before module.share_memory()"
        )

    def materialize(self, shape: Sequence[int], device: Any = None, dtype: Any = None) -> None:
        """Give the tensor ``shape`` (uninitialized values, as ``tw.empty``), on ``device``
        and of ``dtype`` (by default its own)."""
        self.data = tw.empty(  # type: ignore[misc]
            (shape,) if isinstance(shape, int) else tuple(shape),  # torch takes an int too
            device=self.device if device is None else device,  # type: ignore[attr-defined]
            dtype=self.dtype if dtype is None else dtype,  # type: ignore[attr-defined]
        )
        self.__class__ = self.cls_to_become

    def _moved(self, moved: Tensor) -> Tensor:
        """What a move or cast gives: a plain tensor (an uninitialized buffer stays one)."""
        return moved

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)  # type: ignore
        return memo[id(self)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _allowing(name: str) -> Any:
    def method(self: UninitializedTensorMixin, *args: Any, **kwargs: Any) -> Any:
        with _allowed():
            result = getattr(Tensor, name)(self, *args, **kwargs)
        return self._moved(result) if isinstance(result, Tensor) and result is not self else result

    method.__name__ = name
    return method


# PyTorch's list of what an uninitialized tensor allows: its size, copy_, set_, moves and casts.
for _name in (
    "size", "copy_", "set_", "get_device", "to", "cpu", "cuda",
    "half", "float", "double", "char", "short", "int", "long",
):  # fmt: skip
    setattr(UninitializedTensorMixin, _name, _allowing(_name))


def _allowing_property(name: str) -> property:
    def read(self: UninitializedTensorMixin) -> Any:
        with _allowed():
            result = getattr(Tensor, name).__get__(self, Tensor)
        return self._moved(result)

    return property(read)


# PyTorch allows every property (its __torch_function__ lets descriptors' getters through):
# those that compute a tensor from this one, which has no elements (x.T of the empty 1-D).
for _name in ("T", "mT", "H", "mH"):
    setattr(UninitializedTensorMixin, _name, _allowing_property(_name))


def _refusing(name: str) -> Any:
    def method(self: UninitializedTensorMixin, *args: Any, **kwargs: Any) -> Any:
        caller = _caller()
        if caller in _PYTHON_CODE:
            _refuse_shape(self, caller)
        self.native  # noqa: B018 - refused as PyTorch refuses it (ValueError)
        return getattr(Tensor, name)(self, *args, **kwargs)

    method.__name__ = name
    return method


# Methods that read the shape slot itself, not through ``shape``, and those that read no
# storage here but are operations to PyTorch (a new tensor, a cast, autograd hooks, memory
# facts): refused as any operation.
for _name in (
    "_is_view", "dim", "ndimension", "numel", "nelement", "__len__", "element_size",
    "is_contiguous", "item", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
    "new_empty_strided", "type", "type_as", "bfloat16", "numpy", "retain_grad",
    "register_hook", "is_shared", "is_pinned", "untyped_storage", "storage", "is_set_to",
):  # fmt: skip
    setattr(UninitializedTensorMixin, _name, _refusing(_name))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter of a lazy layer before its first forward; materialized, it is a plain
    :class:`Parameter` (the same object, so optimizers built before keep it)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        with _allowed():
            super().__init__(tw.empty(0, device=device, dtype=dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Buffer):
    """A buffer of a lazy layer (``running_mean``, ...) before its first forward: a
    :class:`Buffer`, so assigning it to a module registers it (``persistent`` as given);
    materialized, it is a plain :class:`Tensor` (Buffer adds no slot to Tensor's layout)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(
        self,
        requires_grad: bool = False,
        device: Any = None,
        dtype: Any = None,
        persistent: bool = True,
    ) -> None:
        with _allowed():
            super().__init__(tw.empty(0, device=device, dtype=dtype), persistent=persistent)
            self.requires_grad_(requires_grad)

    def _moved(self, moved: Tensor) -> Tensor:
        return type(self)(self.requires_grad, moved.device, moved.dtype, self.persistent)

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        # PyTorch copies a tensor through its values, which an uninitialized buffer lacks
        raise ValueError(
            "Attempted to deepcopy an uninitialized buffer (UninitializedBuffer), which has no "
            "values to copy. This happens with a LazyModule (a LazyBatchNorm's running "
            "statistics): call its forward with a dummy batch first"
        )


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an :class:`UninitializedParameter` or :class:`UninitializedBuffer`."""
    return isinstance(param, UninitializedTensorMixin)
