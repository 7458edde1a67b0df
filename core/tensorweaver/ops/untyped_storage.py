"""``Tensor.untyped_storage()``: the memory a tensor's elements lie in, as PyTorch's
``UntypedStorage`` shows it (its bytes, address and device); ``Tensor.storage()``, the same
memory counted in elements of the tensor's dtype (PyTorch's deprecated ``TypedStorage``);
``Tensor.is_set_to``. A tensor, its views and its ``detach()`` aliases share one untyped
storage object, as in PyTorch; only the facts that the backend reports exactly are given,
and what would change memory under the tensors is refused."""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from tensorweaver.contract.dtypes import DType
from tensorweaver.tensor import Tensor

#: The storage object handed out for each memory still in use, by ``id`` of the tensor at
#: the root of its views and aliases (the object holds that tensor, so the id stays its).
_HANDED_OUT: weakref.WeakValueDictionary[int, UntypedStorage] = weakref.WeakValueDictionary()


def _root(t: Tensor) -> Tensor:
    """The tensor at the top of ``t``'s chain of bases and aliases: the owner of the memory
    ``t`` and its views and aliases share."""
    while True:
        up = t._view_of[0] if t._view_of is not None else t._alias_of
        if up is None:
            return t
        t = up


class UntypedStorage:
    """The memory behind a tensor and its views, in bytes (``Tensor.untyped_storage()``):
    ``nbytes()`` (also ``size()``, ``len``), ``data_ptr()`` (the address of its first byte),
    ``element_size()`` (1), ``device``. The memory cannot be resized or written through the
    storage here: a tensor's values change through its own in-place methods."""

    __slots__ = ("_root", "__weakref__")

    def __init__(self, root: Tensor) -> None:
        self._root = root

    def _owner(self) -> Any:
        """The backend's object that owns the root's memory (its ``storage`` primitive)."""
        root = self._root
        read = getattr(root.backend, "storage", None)
        owner = None if read is None else read(root.native)
        if owner is None:
            raise NotImplementedError(
                f"untyped_storage(): the {root.device} device does not report the memory its "
                "arrays lie in, so the storage's size and address are unknown; use "
                "t.nbytes and t.data_ptr() of the tensor instead"
            )
        return owner

    def nbytes(self) -> int:
        """The size of the memory in bytes (all of it, for a view of part of it)."""
        found = getattr(self._owner(), "nbytes", None)
        if found is None:
            raise NotImplementedError(
                f"untyped_storage().nbytes(): the {self._root.device} device does not report "
                "the size of the memory its arrays lie in"
            )
        return found() if callable(found) else found

    size = nbytes

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        """The address of the memory's first byte (0 where the backend cannot tell, and for
        no bytes, as PyTorch's null pointer)."""
        root = self._root
        if not self.nbytes():
            return 0
        address = root.data_ptr()
        return address - root.storage_offset() * root.element_size() if address else 0

    def element_size(self) -> int:
        """1: the storage counts bytes."""
        return 1

    @property
    def device(self) -> Any:
        return self._root.device

    def get_device(self) -> int:
        return self._root.get_device()

    @property
    def is_cuda(self) -> bool:
        return self._root.is_cuda

    def untyped(self) -> UntypedStorage:
        return self

    def resize_(self, size: int) -> UntypedStorage:
        """Refused but for the storage's own size: the memory of a tensor here is its
        backend's array, which the storage cannot free or grow under the tensors using it."""
        if size != self.nbytes():
            raise RuntimeError(
                f"UntypedStorage.resize_({size}): this storage ({self.nbytes()} bytes) is not "
                "resizable here: a tensor's memory is its backend's array; free it by dropping "
                "the tensors, or give a tensor new memory with t.set_(...) or t.data = ..."
            )
        return self

    def __repr__(self) -> str:
        return f"[tensorweaver.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The storage of this tensor's memory, shared with its base, views and ``detach()``
    aliases (the same object while one is held, as PyTorch's)."""
    root = _root(self)
    found = _HANDED_OUT.get(id(root))
    if found is None:
        found = _HANDED_OUT[id(root)] = UntypedStorage(root)
    return found


class TypedStorage:
    """An :class:`UntypedStorage` counted in elements of ``dtype`` (``Tensor.storage()``,
    deprecated in PyTorch as here): ``size()`` and ``len`` in elements, ``nbytes()``,
    ``element_size()`` (the dtype's), ``data_ptr()``, ``dtype``, ``device``, ``untyped()``."""

    __slots__ = ("_untyped_storage", "dtype")

    def __init__(self, untyped: UntypedStorage, dtype: DType) -> None:
        self._untyped_storage = untyped
        self.dtype = dtype

    def size(self) -> int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    @property
    def device(self) -> Any:
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def resize_(self, size: int) -> None:
        """Refused but for the storage's own size (see :meth:`UntypedStorage.resize_`);
        returns None, as PyTorch's."""
        self._untyped_storage.resize_(size * self.dtype.itemsize)

    def __repr__(self) -> str:
        return (
            f"[tensorweaver.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
            f"{self.size()}]"
        )


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether this tensor and ``tensor`` show the same elements of one storage: one memory,
    offset, shape and strides (dtypes may differ, as in PyTorch)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    return (
        untyped_storage(self) is untyped_storage(tensor)
        and self.shape == tensor.shape
        and self.storage_offset() == tensor.storage_offset()
        and self.stride() == tensor.stride()
    )


#: Whether ``storage()`` warned yet: PyTorch warns once a process.
_WARNED = [False]


def storage(self: Tensor) -> TypedStorage:
    """The tensor's memory counted in its dtype's elements (a new :class:`TypedStorage` over
    :meth:`untyped_storage`'s object); deprecated, as PyTorch's."""
    if not _WARNED[0]:
        _WARNED[0] = True
        warnings.warn(
            "TypedStorage is deprecated, as in PyTorch: use tensor.untyped_storage() instead "
            "of tensor.storage()",
            UserWarning,
            stacklevel=2,
        )
    return TypedStorage(untyped_storage(self), self._dtype)


#: The methods ``ops/extra_methods.py`` puts on Tensor.
TENSOR_METHODS = (
    ("untyped_storage", untyped_storage),
    ("storage", storage),
    ("is_set_to", is_set_to),
)
