"""Creation functions: the standard's names and keywords over the core's creators, and
``asarray`` (also ``tw.asarray``, with ``torch.asarray``'s semantics)."""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType, int64
from tensorweaver.ops import creation as core
from tensorweaver.tensor import Tensor

Shape = Union[int, tuple]


def asarray(
    obj: Any,
    *,
    dtype: Optional[DType] = None,
    device: Any = None,
    copy: Optional[bool] = None,
    requires_grad: Optional[bool] = None,
) -> Tensor:
    """``obj`` as a tensor, as ``torch.asarray``: a tensor, any DLPack producer (a NumPy
    array, a torch tensor, another library's array API array), a buffer, a Python scalar or a
    nested sequence.

    ``copy=None`` shares memory where it can (a tensor is returned as is when ``dtype`` and
    ``device`` already match; a NumPy array shares as with ``tw.from_numpy`` on a backend
    that shares host memory; a DLPack producer through the backend's ``from_dlpack``);
    ``copy=True`` always copies; ``copy=False`` raises ValueError where a copy is needed.
    Without ``device`` a tensor stays on its device and anything else goes to the current
    device. ``requires_grad=None`` keeps a tensor's flag (False for anything else).
    """
    if isinstance(obj, Tensor):
        out = _from_tensor(obj, dtype, device, copy)
    elif isinstance(obj, np.ndarray) or not hasattr(obj, "__dlpack__"):
        out = _from_host(obj, dtype, device, copy)
    else:
        out = _from_dlpack(obj, dtype, device, copy)
    if requires_grad is not None and requires_grad != out.requires_grad:
        out = out.detach()  # a new tensor over the same values: obj keeps its own flag
        if requires_grad:
            out.requires_grad_()
    return out


def _from_tensor(x: Tensor, dtype: Any, device: Any, copy: Optional[bool]) -> Tensor:
    out = x
    if device is not None:
        out = out.to(device)
    if dtype is not None:
        out = out.to(dtype)
    if out is x:
        return x.clone() if copy else x
    if copy is False:
        raise ValueError(
            f"asarray: copy=False, but moving a {x.dtype.name} tensor on {x.device.name} to "
            f"{out.dtype.name} on {out.device.name} needs a copy; pass copy=None to allow it"
        )
    return out


def _from_host(obj: Any, dtype: Any, device: Any, copy: Optional[bool]) -> Tensor:
    if device is not None:  # made current, so that an array there may share its memory
        with tw.device(device):
            return _from_host(obj, dtype, None, copy)
    if (not isinstance(obj, np.ndarray) and hasattr(obj, "__array__")) or _is_buffer(obj):
        obj = np.asarray(obj)
    if isinstance(obj, np.ndarray):  # PyTorch's refusals first, whatever copy= says
        core.check_host_layout("asarray", obj)
    if isinstance(obj, np.ndarray) and not copy and _shareable_layout(obj):
        shared = core.as_tensor(obj, dtype=dtype)
        if copy is False and not _shares(shared, obj):
            raise ValueError(
                f"asarray: copy=False, but a NumPy array of {obj.dtype} cannot share memory "
                f"with a {shared.dtype.name} tensor on {shared.device.name}; pass copy=None"
            )
        return shared
    if copy is False:
        raise ValueError(
            f"asarray: copy=False, but a {type(obj).__name__} with this layout must be copied "
            "into a tensor; pass copy=None"
        )
    return core.tensor(obj, dtype=dtype)


def _shareable_layout(array: np.ndarray) -> bool:
    """Whether a tensor may use ``array``'s memory (``tw.from_numpy`` refuses the rest)."""
    size = array.dtype.itemsize
    return array.dtype.isnative and all(s >= 0 and s % size == 0 for s in array.strides)


def _is_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _shares(t: Tensor, array: np.ndarray) -> bool:
    host_view = getattr(t.backend, "host_view", None)
    view = host_view(t.native) if host_view is not None else None
    return view is not None and np.shares_memory(view, array)


def _from_dlpack(obj: Any, dtype: Any, device: Any, copy: Optional[bool]) -> Tensor:
    out = _imported("asarray", obj, device or core.backend_for(None).device.name, copy)
    return _from_tensor(out, dtype, None, copy)


def _imported(name: str, obj: Any, device: Any, copy: Optional[bool]) -> Tensor:
    """``obj`` through DLPack on ``device``; ValueError with ``copy=False`` where its
    backend imports no DLPack (the core then copies through the host)."""
    out = core.from_dlpack(obj, device=device)
    if copy is False and getattr(out.backend, "from_dlpack", None) is None:
        raise ValueError(
            f"{name}: copy=False, but a {type(obj).__name__} can only be copied onto "
            f"{out.device.name} (its backend imports no DLPack); pass copy=None"
        )
    return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: Optional[bool] = None) -> Tensor:
    """A tensor over a DLPack producer's memory (``copy=True``: a copy of it)."""
    out = _imported("from_dlpack", x, device, copy)
    return out.clone() if copy else out


def arange(
    start: Union[int, float, complex],
    /,
    stop: Union[int, float, None] = None,
    step: Union[int, float] = 1,
    *,
    dtype: Optional[DType] = None,
    device: Any = None,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` without ``stop``)."""
    return core.arange(start, stop, step, dtype=dtype, device=device)


def empty(shape: Shape, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """A new array of ``shape`` (zeros: there is no uninitialised memory)."""
    return core.empty(shape, dtype=dtype, device=device)


def zeros(shape: Shape, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """A new array of ``shape`` filled with zeros."""
    return core.zeros(shape, dtype=dtype, device=device)


def ones(shape: Shape, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """A new array of ``shape`` filled with ones."""
    return core.ones(shape, dtype=dtype, device=device)


def full(
    shape: Shape,
    fill_value: Union[bool, int, float, complex],
    *,
    dtype: Optional[DType] = None,
    device: Any = None,
) -> Tensor:
    """A new array of ``shape`` filled with ``fill_value``."""
    # (the standard takes an int shape, which torch.full refuses)
    shape = (shape,) if isinstance(shape, int) else shape
    return core.full(shape, fill_value, dtype=dtype, device=device)


def _like_device(x: Tensor, device: Any) -> Any:
    return x.device if device is None else device


def empty_like(x: Tensor, /, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """A new array with ``x``'s shape (and dtype and device unless given)."""
    return core.empty_like(x, dtype=dtype, device=_like_device(x, device))


def zeros_like(x: Tensor, /, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """Zeros with ``x``'s shape (and dtype and device unless given)."""
    return core.zeros_like(x, dtype=dtype, device=_like_device(x, device))


def ones_like(x: Tensor, /, *, dtype: Optional[DType] = None, device: Any = None) -> Tensor:
    """Ones with ``x``'s shape (and dtype and device unless given)."""
    return core.ones_like(x, dtype=dtype, device=_like_device(x, device))


def full_like(
    x: Tensor,
    /,
    fill_value: Union[bool, int, float, complex],
    *,
    dtype: Optional[DType] = None,
    device: Any = None,
) -> Tensor:
    """``fill_value`` with ``x``'s shape (and dtype and device unless given)."""
    return core.full_like(x, fill_value, dtype=dtype, device=_like_device(x, device))


def eye(
    n_rows: int,
    n_cols: Optional[int] = None,
    /,
    *,
    k: int = 0,
    dtype: Optional[DType] = None,
    device: Any = None,
) -> Tensor:
    """Ones on the ``k``-th diagonal of an ``n_rows`` by ``n_cols`` array, zeros elsewhere."""
    n_cols = n_rows if n_cols is None else n_cols
    if k == 0:
        return core.eye(n_rows, n_cols, dtype=dtype, device=device)
    rows = core.arange(n_rows, dtype=int64, device=device)
    cols = core.arange(n_cols, dtype=int64, device=device)
    on = (cols.unsqueeze(0) - rows.unsqueeze(1)) == k
    return on.to(dtype or tw.get_default_dtype())


def linspace(
    start: Union[int, float, complex],
    stop: Union[int, float, complex],
    /,
    num: int,
    *,
    dtype: Optional[DType] = None,
    device: Any = None,
    endpoint: bool = True,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (excluded unless ``endpoint``)."""
    if endpoint or num == 0:
        return core.linspace(start, stop, num, dtype=dtype, device=device)
    return core.linspace(start, stop, num + 1, dtype=dtype, device=device)[:-1]


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate arrays from 1-d arrays (``indexing="xy"``: Cartesian, ``"ij"``: matrix)."""
    return tuple(tw.meshgrid(*arrays, indexing=indexing))


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements above the ``k``-th diagonal zeroed."""
    return tw.tril(x, diagonal=k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """``x`` with the elements below the ``k``-th diagonal zeroed."""
    return tw.triu(x, diagonal=k)
