"""Creating tensors: from data, filled, ranges and random, on the current or a named device."""

from __future__ import annotations

import array
import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any, Callable, TypeVar

import numpy as np

from tensorweaver import random as rnd
from tensorweaver import selection
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.layout import strided
from tensorweaver.memory_formats import channels_last_order, memory_format
from tensorweaver.ops import overflow
from tensorweaver.ops.apply import written_out
from tensorweaver.ops.casting import host_for_half, number_for_half
from tensorweaver.ops.rank import check_ndim
from tensorweaver.promotion import default_complex_dtype, get_default_dtype, promote_types
from tensorweaver.tensor import Tensor, _mark_shared, _shares_host

F = TypeVar("F", bound=Callable[..., Any])

_NUMPY_TO_DTYPE = {np.dtype(d.numpy_name): d for d in dtypes.ALL if d is not dtypes.bfloat16}


def backend_for(device: Any) -> Any:
    """The backend object for a ``device=`` argument (None: the current device)."""
    if device is None:
        backend = selection.current_backend()
    elif isinstance(device, Tensor):
        backend = device.backend
    else:
        backend = selection.backend_of(device)
    return rnd.seeded(backend)


def _check_dtype(dtype: DType, backend: Any) -> DType:
    if not isinstance(dtype, DType):
        raise TypeError(f"dtype must be a tensorweaver dtype such as tw.float32, got {dtype!r}")
    if dtype not in backend.dtypes:
        raise TypeError(
            f"the {backend.device.name} device has no {dtype.name}; it supports "
            f"{', '.join(sorted(d.name for d in backend.dtypes))}"
        )
    return dtype


#: The Python types PyTorch takes as a ``dtype=`` argument, and the dtype each names.
PYTHON_DTYPES = {
    bool: dtypes.bool_,
    int: dtypes.int64,
    float: dtypes.float64,
    complex: dtypes.complex128,
}


def dtype_argument(fn: str, dtype: Any) -> Any:
    """A ``dtype=`` argument as PyTorch reads it: None, a dtype, or a Python type naming one
    (``float`` is float64, ``int`` int64); anything else is its TypeError."""
    if dtype is None or isinstance(dtype, DType):
        return dtype
    if dtype in PYTHON_DTYPES:
        return PYTHON_DTYPES[dtype]
    raise TypeError(
        f"{fn}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__} "
        f"({dtype!r}); pass tw.float32, tw.int64, ..."
    )


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad.__class__ is not bool:  # (PyTorch's argument parser: 1 is no bool)
        raise TypeError(
            f"argument 'requires_grad' must be bool, not {type(requires_grad).__name__}"
        )
    return t.requires_grad_() if requires_grad else t


def _array_dtype(array: np.ndarray) -> DType:
    found = _NUMPY_TO_DTYPE.get(array.dtype)
    if found is not None:
        return found
    if array.dtype.kind == "u":
        raise TypeError(f"tensor(): unsigned dtype {array.dtype} is not supported (only uint8)")
    raise TypeError(
        f"tensor(): can't convert np.ndarray of type {array.dtype}; use numbers, bools, "
        "nested lists of them, or NumPy arrays of numbers"
    )


#: What PyTorch reads as nested data (NumPy arrays inside them are read whole).
_SEQUENCES = (list, tuple, range)
#: Sequences tensor() does not turn into a list first: its own, and text.
_NOT_READ_AS_LIST = (*_SEQUENCES, str, bytes)
_HELD = (Tensor, np.ndarray)
_NUMBERS = frozenset((bool, int, float, complex))
_REALS = frozenset((bool, int, float))
_LISTS = frozenset((list, tuple))
_NUMPY_NUMBERS = (np.number, np.bool_)


class _Leaves:
    """What nested Python data holds: the types of its elements (read list by list, in C),
    the tensors and arrays among them, and whether an empty list is in it."""

    def __init__(self, data: Any) -> None:
        self.types: set[type] = set()
        self.held: list[Any] = []
        self.tensor_dtypes: set[DType] = set()  # of the tensors in ``held``
        self.empty = False
        if not isinstance(data, _SEQUENCES):
            self._add([data], {type(data)})
            return
        stack, types = [data], self.types
        while stack:
            seq = stack.pop()
            if not seq:
                self.empty = True
                continue
            kinds = set(map(type, seq))
            if kinds <= _NUMBERS:  # the usual cases, quickly
                types |= kinds
                continue
            if kinds <= _LISTS:
                stack += seq
                continue
            if any(issubclass(k, _SEQUENCES) for k in kinds):
                stack.extend(x for x in seq if isinstance(x, _SEQUENCES))
                seq = [x for x in seq if not isinstance(x, _SEQUENCES)]
                kinds = set(map(type, seq))
            self._add(seq, kinds)

    def _add(self, seq: Any, kinds: set[type]) -> None:
        self.types |= kinds
        if any(issubclass(k, _HELD) for k in kinds):
            self.held.extend(x for x in seq if isinstance(x, _HELD))
            self.tensor_dtypes.update(x.dtype for x in seq if isinstance(x, Tensor))

    def dtype(self) -> DType:
        """PyTorch's dtype for the data: each number's own (bool, int64, the default float
        or complex dtype; a NumPy scalar, array or tensor its dtype), promoted over all of
        them as ``torch.promote_types`` does; an empty list counts as the default dtype."""
        if len(self.types) == 1 and not self.held and not self.empty:  # quickly
            return _number_dtype(next(iter(self.types)))
        found = {get_default_dtype()} if self.empty or not self.types else set()
        found |= self.tensor_dtypes
        found.update(_array_dtype(x) for x in self.held if isinstance(x, np.ndarray))
        found.update(_number_dtype(t) for t in self.types if not issubclass(t, _HELD))
        return functools.reduce(promote_types, found)

    def check(self, dtype: DType) -> None:
        """Refuse, as PyTorch's element conversion does, a value that ``dtype`` cannot hold:
        a complex number for a real dtype other than bool, a NumPy float (other than float64)
        or NumPy bool for an integer dtype (NumPy's float32 not for bool either), and
        non-numbers."""
        if self.types <= _REALS:  # Python's real numbers convert to any dtype
            return
        for t in self.types:
            if issubclass(t, _HELD):
                continue
            _number_dtype(t, dtype)
            if dtype.is_complex:
                continue
            if dtype.is_floating_point:
                if issubclass(t, complex):
                    raise TypeError(
                        "tensor(): must be real number, not complex; pass the real parts, or "
                        "a complex dtype"
                    )
                continue
            numpy_kind = np.dtype(t).kind if issubclass(t, np.generic) else None
            refused = (
                issubclass(t, complex)
                and dtype is not dtypes.bool_
                or numpy_kind == "c"
                and not issubclass(t, complex)
                or numpy_kind == "f"
                and not issubclass(t, float)
                or numpy_kind == "b"
                and dtype is not dtypes.bool_
            )
            if refused:
                raise TypeError(
                    f"tensor(): '{t.__module__}.{t.__name__}' object cannot be interpreted as "
                    f"an integer ({dtype.name} data); convert it first, e.g. int(x)"
                )
        if any(issubclass(t, np.ndarray) for t in self.types):
            for x in self.held:
                if isinstance(x, np.ndarray):
                    _array_dtype(x)  # PyTorch's TypeError for arrays of strings or objects
        if dtype.kind in "iub":
            for d in self.tensor_dtypes:
                if d.kind not in "iub":
                    raise TypeError(
                        f"tensor(): only integer tensors of a single element can be converted "
                        f"to an index: a {d.name} tensor is in the {dtype.name} data; "
                        "convert it first, e.g. x.long()"
                    )
        elif dtype.kind == "f" and any(d.is_complex for d in self.tensor_dtypes):
            for x in self.held:
                if isinstance(x, Tensor) and x.dtype.is_complex:
                    _check_real(x)


def _check_real(x: Tensor) -> None:
    """PyTorch reads a complex tensor in the data of a real dtype as a real number: a
    nonzero imaginary part overflows."""
    if np.any(x.backend.to_host(x.native).imag):
        raise RuntimeError(
            "tensor(): value cannot be converted to a real dtype without overflow: a complex "
            "tensor in the data has a nonzero imaginary part; pass its real part (x.real) or a "
            "complex dtype"
        )


def _number_dtype(t: type, wanted: DType | None = None) -> DType:
    """The dtype PyTorch reads a number of type ``t`` as; for anything else, its error (a
    RuntimeError while inferring the dtype, a TypeError when converting to ``wanted``)."""
    if t is float:  # the usual case, quickly
        return get_default_dtype()
    if issubclass(t, (str, bytes)):
        raise TypeError(f"tensor(): invalid data type '{t.__name__}'; pass numbers")
    if issubclass(t, np.generic):
        if np.dtype(t).kind in "biufc":
            return _array_dtype(np.empty(0, t))
    elif t is bool:
        return dtypes.bool_
    elif issubclass(t, int):
        return dtypes.int64
    elif issubclass(t, float):
        return get_default_dtype()
    elif issubclass(t, complex):
        return default_complex_dtype()
    if wanted is not None:
        raise TypeError(
            f"tensor(): {t.__name__} is not a number; {wanted.name} tensors hold numbers"
        )
    raise RuntimeError(
        f"tensor(): could not infer dtype of {t.__name__}; use numbers, bools, nested lists "
        "of them, NumPy arrays or tensors"
    )


def _check_text_first(data: Any) -> None:
    """PyTorch reads the shape from the first elements before anything else, and text is a
    sequence to it: a str first in a list makes too many dimensions (a ValueError)."""
    while isinstance(data, _SEQUENCES) and len(data):
        data = data[0]
        if isinstance(data, str):
            raise ValueError(
                f"tensor(): too many dimensions '{type(data).__name__}'; the data holds text "
                "where numbers belong"
            )


def tensor(
    data: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays or tensors)."""
    if dtype is not None:
        dtype = dtype_argument("tensor", dtype)
    if pin_memory:
        _storage_options("tensor", {"pin_memory": pin_memory})
    if isinstance(data, Tensor):
        warnings.warn(  # PyTorch's advice: the copy drops the graph
            "tensor(): to copy a tensor, use t.detach().clone() (then .requires_grad_(True) "
            "if needed) rather than tw.tensor(t)",
            UserWarning,
            stacklevel=2,
        )
        backend = data.backend if device is None else backend_for(device)
        host = data.backend.to_host(data.native)
        dtype = dtype or data.dtype
    elif isinstance(data, np.ndarray) or dtype is None and isinstance(data, _NUMPY_NUMBERS):
        # a NumPy scalar without dtype= reads as the 0-d array of its own dtype
        data = np.asarray(data)
        check_host_layout("tensor()", data)
        backend = backend_for(device)
        if dtype is None or data.dtype.kind not in "biufc":
            inferred = _array_dtype(data)  # for strings and objects, PyTorch's TypeError
            dtype = dtype or inferred
        host = data
    elif not isinstance(data, _SEQUENCES) and _array_like(data):
        return tensor(np.asarray(data), dtype, device, requires_grad)
    elif _other_sequence(type(data)):  # a deque, an array.array...: read as PyTorch does
        return tensor(_plain_lists(data), dtype, device, requires_grad)
    else:
        backend = backend_for(device)
        if type(data) in (float, int, bool):  # a Python number: any dtype takes it
            inferred = _number_dtype(type(data))
        else:
            leaves = _Leaves(data)
            if not leaves.types <= _NUMBERS:
                if any(map(_other_sequence, leaves.types)):
                    return tensor(_plain_lists(data), dtype, device, requires_grad)
                if any(issubclass(t, str) for t in leaves.types):
                    _check_text_first(data)
            inferred = leaves.dtype() if dtype is None else None
            leaves.check(dtype or inferred)
            if leaves.tensor_dtypes:
                data = _lists_of(data)
        host = _host_array(data, dtype)
        if host.dtype.kind == "c" and dtype is not None and dtype.is_floating_point:
            host = host.real  # what PyTorch reads (imaginary parts checked), without a warning
        dtype = dtype or inferred
        if dtype.kind in "iu":
            overflow.check_fits(host, dtype, "tensor()")
    _check_dtype(dtype, backend)
    check_ndim("tensor", host.shape, backend)
    host = host_for_half(host, dtype)  # float64 values rounded through float32, as PyTorch
    return _finish(Tensor(backend.from_host(host, dtype), backend, dtype), requires_grad)


def _other_sequence(t: type) -> bool:
    """Whether ``t`` is a sequence PyTorch reads as a list but ``tensor()`` does not walk
    itself (a deque, an array.array...)."""
    return issubclass(t, (Sequence, array.array)) and not issubclass(t, _NOT_READ_AS_LIST)


def _plain_lists(data: Any) -> Any:
    """``data`` with every sequence in it made a list."""
    if isinstance(data, _SEQUENCES) or _other_sequence(type(data)):
        return [_plain_lists(x) for x in data]
    return data


def _array_like(data: Any) -> bool:
    """Whether ``data`` is another library's array (a torch tensor...): read through NumPy."""
    return hasattr(data, "__array__") and not isinstance(data, np.generic)


def _host_array(data: Any, dtype: DType | None) -> np.ndarray:
    """Python data as NumPy reads it, then as PyTorch does (see :mod:`.overflow`)."""
    try:
        array = np.asarray(data)
    except ValueError:
        _check_shape(data, _shape_of(data), 0)
        raise
    return overflow.host_array(array, data, dtype)


def _shape_of(data: Any) -> list[int]:
    """The shape PyTorch reads from nested sequences: the lengths of the first elements."""
    shape = []
    while isinstance(data, _SEQUENCES) or isinstance(data, np.ndarray) and data.ndim > 0:
        shape.append(len(data))
        if not len(data):
            break
        data = data[0]
    return shape


def _check_shape(data: Any, shape: list[int], dim: int) -> None:
    """PyTorch's errors for ragged data: a number where a sequence belongs is a TypeError, a
    sequence of another length a ValueError."""
    nested = isinstance(data, _SEQUENCES) or isinstance(data, np.ndarray) and data.ndim > 0
    if dim == len(shape):
        if nested:
            raise TypeError(
                f"tensor(): expected a number at dim {dim}, got a sequence; the data is ragged"
            )
        return
    if not nested:
        raise TypeError(
            f"tensor(): expected a sequence at dim {dim}, got {type(data).__name__} (not a "
            "sequence); the data is ragged"
        )
    if len(data) != shape[dim]:
        raise ValueError(
            f"tensor(): expected sequence of length {shape[dim]} at dim {dim} (got {len(data)});"
            " the data is ragged"
        )
    for x in data:
        _check_shape(x, shape, dim + 1)


def _lists_of(data: Any) -> Any:
    """``data`` with each tensor in it read as the number it holds (PyTorch reads a tensor
    inside a list as one number: one of several elements is a ValueError)."""
    if isinstance(data, Tensor):
        return _number_of(data)
    if isinstance(data, (list, tuple)):
        return [_number_of(x) if isinstance(x, Tensor) else _lists_of(x) for x in data]
    return data


def _number_of(x: Tensor) -> np.ndarray:
    host = x.backend.to_host(x.native)
    if host.size != 1:
        raise ValueError(
            f"tensor(): only one element tensors can be converted to Python scalars; a "
            f"tensor of shape {tuple(x.shape)} is inside the list (use tw.stack to join "
            "tensors)"
        )
    return host.reshape(()) if host.ndim else host


def as_tensor(data: Any, dtype: DType | None = None, device: Any = None) -> Tensor:
    """``data`` as a tensor: a tensor already on that device and dtype is returned as is, and
    a NumPy array on the current device, in its own dtype, shares its memory as with
    :func:`from_numpy` (where the backend shares host memory)."""
    if dtype is not None:
        dtype = dtype_argument("as_tensor", dtype)
    if isinstance(data, Tensor):
        out = data if device is None else data.to(device)
        return out if dtype is None else out.to(dtype)
    if isinstance(data, np.ndarray) and device is None and _shareable(data, dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _shareable(array: np.ndarray, dtype: DType | None) -> bool:
    """Whether ``array`` is of ``dtype`` (None: any of ours): ``from_numpy`` then takes it,
    or raises PyTorch's error for its strides."""
    found = _NUMPY_TO_DTYPE.get(array.dtype)
    return found is not None and dtype in (None, found)


def from_numpy(ndarray: np.ndarray, /) -> Tensor:
    """A tensor on the current device over ``ndarray``'s values, as ``torch.from_numpy``.

    Where the backend shares host memory (NumPy; torch on the CPU) the tensor uses the
    array's own memory, without a copy: a write on either side, an in-place tensor method
    included, is seen by the other (:mod:`tensorweaver.tensor` says how far). Elsewhere (torch
    on a GPU, cuPyNumeric) the tensor holds a copy. As in PyTorch, a read-only array gives a
    UserWarning (the tensor reads its memory, but an in-place method gives the tensor a copy
    of its own rather than write into it); another byte order or a negative stride is a
    ValueError; a dtype TensorWeaver lacks (uint16, complex256, ...) is a TypeError.
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(ndarray).__name__}")
    dtype = _from_numpy_dtype(ndarray)
    backend = backend_for(None)
    _check_dtype(dtype, backend)
    check_ndim("from_numpy", ndarray.shape, backend)
    writeable = ndarray.flags.writeable
    if not writeable:
        warnings.warn(
            "from_numpy: the given NumPy array is not writable; the tensor reads its memory, "
            "and an in-place operation on the tensor gives it a copy of its own. Copy the "
            "array (array.copy()) to silence this",
            UserWarning,
            stacklevel=2,
        )
    native = backend.wrap_host(ndarray) if _shares_host(backend) else None
    if native is None:
        return Tensor(backend.from_host(ndarray, dtype), backend, dtype)
    out = Tensor(native, backend, dtype)
    _mark_shared(out, writes=writeable)
    return out


def _from_numpy_dtype(array: np.ndarray) -> DType:
    """The dtype ``from_numpy`` gives ``array``, after PyTorch's checks on its layout."""
    dt = array.dtype
    check_host_layout("from_numpy", array)
    found = _NUMPY_TO_DTYPE.get(dt)
    if found is None:
        raise TypeError(
            f"from_numpy: can't convert np.ndarray of type numpy.{dt.type.__name__}; the only "
            "supported types are complex128, complex64, float64, float32, float16, int64, "
            "int32, int16, int8, uint8 and bool (convert first, e.g. array.astype(np.int64))"
        )
    if any(s % dt.itemsize for s in array.strides):
        raise ValueError(
            f"from_numpy: the array's strides {array.strides} are not a multiple of its "
            f"element size ({dt.itemsize} bytes); pass a copy (array.copy())"
        )
    return found


def check_host_layout(fn: str, array: np.ndarray) -> None:
    """PyTorch's ValueErrors for a NumPy array it reads (``tensor``, ``as_tensor``,
    ``from_numpy``): another byte order, or a negative stride (even where one element would
    make it meaningless), both of which a copy made by the caller avoids."""
    if not array.dtype.isnative:
        raise ValueError(
            f"{fn}: the array has byte order {array.dtype.byteorder!r}, different from the "
            "native byte order; conversion between byte orders is not supported (convert "
            "first with array.astype(array.dtype.newbyteorder('='))"
        )
    if array.ndim and min(array.strides) < 0:
        raise ValueError(
            f"{fn}: at least one stride of the array is negative, which tensors do not "
            "support; pass a copy (array.copy())"
        )


def from_dlpack(obj: Any, device: Any = None) -> Tensor:
    """A tensor sharing memory with any DLPack producer (a NumPy array, a torch tensor, ...).

    Without ``device`` a torch tensor lands on the matching torch device and a NumPy array
    on NumPy; the copy is avoided where the backend implements the optional ``from_dlpack``.
    """
    if device is None:
        device = _dlpack_home(obj)
    backend = backend_for(device)
    importer = getattr(backend, "from_dlpack", None)
    native = importer(obj) if importer is not None else None
    if native is None:
        host = np.from_dlpack(obj)
        return tensor(host, device=backend.device.name)
    name = str(native.dtype).rsplit(".", 1)[-1]
    out = Tensor(native, backend, dtypes.BY_NAME[name])
    if _shares_host(backend):  # the producer's memory: writes go into it, as from_numpy's
        _mark_shared(out)
    return out


def _dlpack_home(obj: Any) -> Any:
    module = type(obj).__module__.split(".")[0]
    if module == "torch":
        kind = obj.device.type
        return f"torch:{kind}" + ("" if obj.device.index is None else f":{obj.device.index}")
    if module == "numpy":
        return "numpy"
    return None


def _size(args: tuple, fn: str) -> tuple:
    """A shape from ``fn``'s ``*size`` (ints, or one tuple, list or Size of them; an integer
    0-d tensor counts as its value, as in PyTorch)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    if all(type(a) is int and a >= 0 for a in args):  # the usual case, quickly
        return args
    args = tuple(a.item() if _integer_tensor(a) and a.ndim == 0 else a for a in args)
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(
                f"{fn}(): argument 'size' must be tuple of ints, not "
                f"{type(a).__name__} (got sizes {list(args)})"
            )
        if a < 0:
            raise RuntimeError(
                f"trying to create a tensor with negative dimension {a}: sizes {list(args)}"
            )
    return tuple(int(a) for a in args)


def _sizes(fn: str, size: tuple, storage: dict) -> tuple:
    """The shape of ``fn(*size)`` or ``fn(size=...)``; PyTorch requires one of them."""
    if "size" in storage:
        if size:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        size = (storage.pop("size"),)
    elif not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    _storage_options(fn, storage)
    return _size(size, fn)


def with_out(name: str, warns: bool = False, formats: bool = False) -> Callable[[F], F]:
    """PyTorch's keyword ``out=`` for the creation function ``name``: the result written
    into ``out`` (resized to it, silently unless ``warns``: only arange warns in PyTorch),
    of ``out``'s dtype unless ``dtype`` names another, which is a RuntimeError as in
    PyTorch; ``formats``: ``name`` takes ``memory_format=``, which ``out=`` refuses."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
            if out is None:  # the usual call
                return fn(*args, **kwargs)
            if formats and kwargs.get("memory_format") is not None:
                raise RuntimeError(
                    f"{name}(): 'memory_format' argument is incompatible with 'out' tensor "
                    "argument; lay out the out tensor itself"
                )
            dtype = kwargs.pop("dtype", None)
            if isinstance(out, Tensor) and dtype not in (None, out.dtype):
                raise RuntimeError(
                    f"{name}(): dtype {dtype.name} does not match dtype of out parameter "
                    f"({out.dtype.name}); drop dtype= or pass an out tensor of that dtype"
                )
            wanted = out.dtype if isinstance(out, Tensor) else dtype
            result = fn(*args, dtype=wanted, **kwargs)
            if not warns and isinstance(out, Tensor) and not out.requires_grad:
                if out.shape != result.shape:
                    out.resize_(*result.shape)
            return written_out(name, result, out, same_dtype=True)

        return call  # type: ignore[return-value]

    return wrap


@with_out("full")
def full(
    size: Any,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("full", dtype)
    _storage_options("full", storage)
    if type(fill_value) not in _NUMBERS:
        fill_value = _fill_number(fill_value)
    if dtype is None:
        dtype = (
            dtypes.bool_
            if isinstance(fill_value, bool)
            else dtypes.int64
            if isinstance(fill_value, int)
            else default_complex_dtype()
            if isinstance(fill_value, complex)
            else get_default_dtype()
        )
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            f"full(): argument 'size' (position 1) must be tuple of ints, not "
            f"{type(size).__name__}; write full(({size},), value)"
        )
    return _filled(_size((size,), "full"), fill_value, dtype, device, requires_grad)


def _fill_number(fill_value: Any) -> Any:
    """``full``'s ``fill_value`` as the number PyTorch reads."""
    if isinstance(fill_value, Tensor):
        if fill_value.ndim:
            raise TypeError(
                f"full(): argument 'fill_value' must be Number, not a Tensor of shape "
                f"{tuple(fill_value.shape)}; pass a number or a 0-dim tensor"
            )
        return fill_value.item()
    if isinstance(fill_value, np.integer):
        return int(fill_value)
    if isinstance(fill_value, np.generic) and not isinstance(fill_value, (float, complex)):
        # PyTorch reads NumPy's other scalars (bools, float32, complex64...) as floats
        return float(fill_value.real)
    return fill_value


def _filled(
    shape: tuple, fill_value: Any, dtype: DType, device: Any, requires_grad: bool
) -> Tensor:
    """A tensor of the checked ``shape`` filled with the number ``fill_value``."""
    backend = backend_for(device)
    _check_dtype(dtype, backend)
    check_ndim("full", shape, backend)
    number = number_for_half(overflow.fill_value(fill_value, dtype, "full()"), dtype)
    native = backend.full(shape, number, dtype)
    return _finish(Tensor(native, backend, dtype), requires_grad)


@with_out("zeros")
def zeros(
    *size: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("zeros", dtype)
    shape = _sizes("zeros", size, storage)
    return _filled(shape, 0, dtype or get_default_dtype(), device, requires_grad)


@with_out("ones")
def ones(
    *size: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("ones", dtype)
    shape = _sizes("ones", size, storage)
    return _filled(shape, 1, dtype or get_default_dtype(), device, requires_grad)


@with_out("empty", formats=True)
def empty(
    *size: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """Zeros (the IR has no uninitialised memory; zeros cost the same), laid out in
    ``memory_format`` as PyTorch's ``empty`` lays it out."""
    if dtype is not None:
        dtype = dtype_argument("empty", dtype)
    memory_format = storage.pop("memory_format", None) if storage else None
    shape = _sizes("empty", size, storage)
    dtype = dtype or get_default_dtype()
    if memory_format is None:  # the usual call
        return _finish(_filled(shape, 0, dtype, device, False), requires_grad)
    _storage_options("empty", {"memory_format": memory_format}, _LAYOUT_OPTIONS)
    if memory_format.name == "preserve_format":
        raise RuntimeError(
            "empty(): unsupported memory format Preserve: a new tensor has no layout to keep; "
            "pass tw.contiguous_format or a channels-last format"
        )
    order = channels_last_order(memory_format, shape)
    made = _made_in_order(lambda s: _filled(s, 0, dtype, device, False), shape, order)
    return _finish(made, requires_grad)


#: PyTorch's keywords of every factory here; empty and the ``*_like`` functions take
#: ``memory_format=`` too.
_STORAGE_OPTIONS = ("layout", "pin_memory")
_LAYOUT_OPTIONS = (*_STORAGE_OPTIONS, "memory_format")


def _storage_options(fn: str, options: dict, names: tuple = _STORAGE_OPTIONS) -> None:
    """PyTorch's ``layout=``, ``pin_memory=`` and (of ``names``) ``memory_format=`` keywords,
    checked: every tensor here is strided and laid out densely, so the only layout is
    ``tw.strided``, and a memory format (``tw.channels_last``...) changes no value, only the
    strides PyTorch would pick; pinned memory is host memory as any other here."""
    for name, value in options.items():
        if name not in names:
            raise TypeError(f"{fn}() got an unexpected keyword argument '{name}'")
        if value is None:
            continue
        if name == "layout" and value is not strided:
            raise TypeError(
                f"{fn}(): layout {value!r} is not supported; every tensor is tw.strided "
                "(there are no sparse tensors)"
            )
        if name == "memory_format" and not isinstance(value, memory_format):
            raise TypeError(
                f"{fn}(): argument 'memory_format' must be tw.memory_format, not "
                f"{type(value).__name__}"
            )
        if name == "pin_memory" and not isinstance(value, bool):
            raise TypeError(
                f"{fn}(): argument 'pin_memory' must be bool, not {type(value).__name__}"
            )


def _like(x: Tensor, dtype: DType | None, device: Any) -> dict:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"argument 'input' (position 1) must be Tensor, not {type(x).__name__}; convert it "
            "first with tw.as_tensor"
        )
    return {"dtype": dtype or x.dtype, "device": device if device is not None else x}


def _full_like(
    x: Tensor, fill_value: Any, dtype: Any, device: Any, requires_grad: bool, storage: dict
) -> Tensor:
    """``full`` of ``x``'s shape laid out as PyTorch's ``*_like`` lays it out: in
    ``memory_format``, or (``preserve_format``, the default) in ``x``'s own axis order, such
    as a channels-last tensor's, a stepped view's too (PyTorch's ``infer_dense_strides``: an
    expanded one's zero strides keep their place)."""
    like = _like(x, dtype, device)
    order = _like_order(x, storage)
    if order is None:
        return full(x.shape, fill_value, **like, requires_grad=requires_grad)
    out = _made_in_order(lambda shape: full(shape, fill_value, **like), x.shape, order)
    return out.requires_grad_() if requires_grad else out


def _like_order(x: Tensor, storage: dict) -> tuple[int, ...] | None:
    """The axes, outermost first, in which a ``*_like`` function lays out a new tensor like
    ``x``: its ``memory_format``, or (``preserve_format``, the default) ``x``'s own order;
    None for C order."""
    given = storage.get("memory_format")
    if given is None or given.name == "preserve_format":
        order = x._preserved_order()
    else:
        order = channels_last_order(given, x.shape)
    return None if order is None or order == tuple(range(x.ndim)) else order


def _made_in_order(
    make: Callable[[tuple], Tensor], shape: tuple, order: tuple[int, ...] | None
) -> Tensor:
    """``make(shape)`` laid out row-major in the axis order ``order`` (C order where None):
    made in that order's shape and seen in ``shape``'s, the strides PyTorch gives."""
    if order is None:
        return make(shape)
    made = make(tuple(shape[d] for d in order))
    inverse = tuple(order.index(axis) for axis in range(len(shape)))
    return Tensor(made.backend.permute(made.native, inverse), made.backend, made.dtype)


def zeros_like(
    input: Tensor,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("zeros_like", dtype)
    _storage_options("zeros_like", storage, _LAYOUT_OPTIONS)
    return _full_like(input, 0, dtype, device, requires_grad, storage)


def ones_like(
    input: Tensor,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("ones_like", dtype)
    _storage_options("ones_like", storage, _LAYOUT_OPTIONS)
    return _full_like(input, 1, dtype, device, requires_grad, storage)


empty_like = zeros_like


def full_like(
    input: Tensor,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("full_like", dtype)
    _storage_options("full_like", storage, _LAYOUT_OPTIONS)
    return _full_like(input, fill_value, dtype, device, requires_grad, storage)


def zeros_like_shape(like: Tensor, shape: tuple) -> Tensor:
    """Zeros of ``shape`` on ``like``'s device and dtype (for gradient rules)."""
    check_ndim("zeros", shape, like.backend)
    return Tensor(like.backend.full(shape, 0, like.dtype), like.backend, like.dtype)


def _as_number(value: Any) -> Any:
    return value.item() if isinstance(value, (Tensor, np.generic)) else value


@with_out("arange", warns=True)
def arange(
    start: Any = None,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """``[start, end)`` by ``step``, as ``torch.arange``: ``arange(end)``, ``arange(start,
    end, step=1)`` or keywords; int64 when every bound is an integer, else the default
    float dtype. For an integer ``dtype`` PyTorch truncates each bound to an integer first."""
    if dtype is not None:
        dtype = dtype_argument("arange", dtype)
    _storage_options("arange", storage)
    if start is None and end is None:
        raise TypeError(
            "arange() missing required argument 'end': use arange(end) or arange(start, end, step)"
        )
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    if type(start) is int and type(end) is int and type(step) is int and step:
        if dtype is None or dtype is dtypes.int64:  # the usual case, quickly
            _check_step_sign(start, end, step)
            return _finish(_int64_range(start, end, step, device), requires_grad)
    # 0-d tensors and NumPy scalars count as the Python numbers they hold (an int64 tensor
    # bound gives an int64 range, as in PyTorch)
    start, end, step = _as_number(start), _as_number(end), _as_number(step)
    if dtype is None:
        dtype = (
            dtypes.int64
            if all(isinstance(v, int) for v in (start, end, step))
            else get_default_dtype()
        )
    # PyTorch checks the dtype before anything about the bounds
    if dtype.is_complex or dtype is dtypes.bool_:
        raise NotImplementedError(
            f'"arange_cpu" not implemented for {dtype.name}; make an int64 or float range '
            f"and convert it, e.g. tw.arange(n).to(tw.{dtype.name})"
        )
    if isinstance(start, complex) or isinstance(end, complex) or isinstance(step, complex):
        raise RuntimeError(
            f"arange: value cannot be converted to type double without overflow: from {start} "
            f"to {end} by {step}; pass real bounds and step"
        )
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    for bound in (start, end):
        if not math.isfinite(bound):
            raise RuntimeError(
                f"arange: unsupported range: {start} -> {end} (bounds must be finite)"
            )
    if dtype.kind in "iu":
        return _finish(_integer_range(start, end, step, dtype, device), requires_grad)
    _check_step_sign(start, end, step)
    backend = backend_for(device)
    _check_dtype(dtype, backend)
    return _finish(Tensor(backend.arange(start, end, step, dtype), backend, dtype), requires_grad)


def _check_step_sign(start: Any, end: Any, step: Any) -> None:
    if (end - start) * step < 0:
        raise RuntimeError(
            f"arange: upper bound and lower bound inconsistent with step sign: from {start} to "
            f"{end} by {step}; use a step of the other sign"
        )


def _int64_range(start: int, end: int, step: int, device: Any) -> Tensor:
    backend = backend_for(device)
    _check_dtype(dtypes.int64, backend)
    return Tensor(backend.arange(start, end, step, dtypes.int64), backend, dtypes.int64)


def _integer_range(start: Any, end: Any, step: Any, dtype: DType, device: Any) -> Tensor:
    """PyTorch's integer ``arange``: bounds and step truncated to integers, the length
    computed from the truncated values for int64 but from the given ones for the other
    integer dtypes, values wrapping into ``dtype``."""
    first, last, by = int(start), int(end), int(step)
    _check_step_sign(start, end, step)
    if dtype is dtypes.int64:
        if by == 0:  # a fractional step truncated to nothing
            raise ValueError(
                f"arange: step must be nonzero (step {step} truncates to 0 for int64); pass "
                "an integer step"
            )
        span = last - first + by - (1 if by > 0 else -1)
        n = abs(span) // abs(by) * (1 if (span >= 0) == (by > 0) else -1)
    else:
        n = math.ceil((end - start) / step)
    backend = backend_for(device)
    _check_dtype(dtype, backend)
    n = max(n, 0)
    if n and by:
        values = backend.arange(first, first + n * by, by, dtypes.int64)
    else:  # every value is the first
        values = backend.full((n,), first, dtypes.int64)
    return Tensor(backend.cast(values, dtype), backend, dtype)


@with_out("linspace")
def linspace(
    start: Any,
    end: Any,
    steps: int,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (complex when
    either end is a complex number), computed as PyTorch's CPU kernel does: in ``dtype``,
    the first half stepping up from ``start``, the second half down from ``end``."""
    if dtype is not None:
        dtype = dtype_argument("linspace", dtype)
    _storage_options("linspace", storage)
    start, end = (_range_end("linspace", v) for v in (start, end))
    if _integer_tensor(steps) and steps.ndim == 0:
        steps = int(steps.item())
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    ends_complex = isinstance(start, complex) or isinstance(end, complex)
    inferred = default_complex_dtype() if ends_complex else get_default_dtype()
    dtype = dtype or inferred
    if ends_complex and not dtype.is_complex:
        raise RuntimeError(
            f"linspace: inferred dtype {inferred.name} can't be safely cast to passed dtype "
            f"{dtype.name}; pass a complex dtype or real ends"
        )
    if dtype is dtypes.bool_ and steps > 1:  # PyTorch fills one or no step without the kernel
        raise NotImplementedError(
            "linspace: not implemented for bool from two steps on; make a float range and "
            "compare it"
        )
    return tensor(
        _spaced(start, end, steps, dtype), dtype=dtype, device=device, requires_grad=requires_grad
    )


def _range_end(fn: str, value: Any) -> Any:
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                f"{fn} only supports 0-dimensional start and end tensors, but got a tensor "
                f"with {value.ndim} dimension(s)"
            )
        return value.item()
    return value.item() if isinstance(value, np.generic) else value


def _spaced(start: Any, end: Any, steps: int, dtype: DType) -> np.ndarray:
    """PyTorch's linspace values on the host: integer dtypes step in float64 from the ends
    converted to the dtype; the others compute in their own precision."""
    index = np.arange(steps)
    half = steps // 2
    if dtype.kind in "iub":
        kind = np.float64
        # the ends converted to the dtype first (checked, unsigned ones wrapping), as PyTorch
        convert = functools.partial(overflow.fill_value, dtype=dtype, fn="linspace")
    else:
        kind = np.float32 if dtype is dtypes.bfloat16 else np.dtype(dtype.numpy_name).type
        # (a double reaches float16 through float32, as PyTorch converts it)
        convert = _through_float32 if kind is np.float16 else kind
    if steps < 2:  # PyTorch reads no end (nor start, for none)
        return np.array([convert(start)] if steps else [], dtype=kind)
    first, last = convert(start), convert(end)
    if dtype is dtypes.bfloat16:
        return _bfloat16_spaced(first, last, steps)
    if dtype.is_complex:  # each part divided by the real count (NumPy's complex division
        # by a complex number rounds differently)
        real, span = np.float32 if kind is np.complex64 else np.float64, kind(last - first)
        step = kind(complex(span.real / real(steps - 1), span.imag / real(steps - 1)))
    else:
        step = kind(last - first) / kind(steps - 1)
    # float16 rounds after each operation; the other kernels fuse the multiply-add (one
    # rounding): computed wider, then rounded once (integers are truncated after that).
    wide = kind if kind is np.float16 else np.clongdouble if dtype.is_complex else np.longdouble
    up = wide(first) + wide(step) * index.astype(wide)
    down = wide(last) - wide(step) * (steps - 1 - index).astype(wide)  # (the count exact)
    values = np.where(index < half, up, down).astype(kind)
    return np.trunc(values).astype(np.int64) if dtype.kind in "iub" else values


def _through_float32(value: Any) -> np.float16:
    return np.float16(np.float32(value))


def _bfloat16_spaced(first: np.float32, last: np.float32, steps: int) -> np.ndarray:
    """PyTorch's bfloat16 linspace: each operation rounded to bfloat16 (in float32)."""
    r = _round_bfloat16
    first, last = r(first), r(last)
    step = r((last - first) / r(np.float32(steps - 1)))
    index = np.arange(steps)
    up = r(first + r(step * r(index.astype(np.float32))))
    down = r(last - r(step * r((steps - 1 - index).astype(np.float32))))
    return np.where(index < steps // 2, up, down)


def _round_bfloat16(x: Any) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


@with_out("eye")
def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("eye", dtype)
    _storage_options("eye", storage)
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {value}")
    backend = backend_for(device)
    dtype = _check_dtype(dtype or get_default_dtype(), backend)
    k = min(n, m)
    if not k:
        return _finish(Tensor(backend.full((n, m), 0, dtype), backend, dtype), requires_grad)
    # Read flat, an identity is a one and then m zeros, over and over, cut to n * m: a column
    # of k ones padded to `rows` rows of m + 1. That pad is the one large array, and the
    # first, so a size no memory holds fails at once (as PyTorch's), not after aranges of n.
    rows = -(-n * m // (m + 1))  # at least k
    ones = backend.expand(backend.full((1, 1), 1, dtype), (k, 1))  # a view: no memory
    pattern = backend.pad(ones, ((0, rows - k), (0, m)), 0)
    flat = backend.reshape(pattern, (rows * (m + 1),))
    out = backend.reshape(backend.slice(flat, (0,), (n * m,), (1,)), (n, m))
    return _finish(Tensor(out, backend, dtype), requires_grad)


def _random(
    kind: str, size: tuple, dtype: DType | None, device: Any, generator: Any, *args: float
) -> Tensor:
    """Float samples, uniform (``args``: low, high) or normal (mean, std): from the device's
    own generator, or drawn on the host from ``generator`` (see :mod:`tensorweaver.random`).
    Complex samples are two real draws, as PyTorch's: each part uniform in [low, high), or
    normal with the given mean and variance std**2 / 2 (so |z - mean| has variance std**2)."""
    backend = backend_for(device)
    dtype = dtype or get_default_dtype()
    _check_dtype(dtype, backend)
    if dtype.is_complex:
        if kind == "normal":
            args = (args[0], args[1] / math.sqrt(2))
        parts = [_random(kind, size, dtype.to_real(), device, generator, *args) for _ in "ri"]
        return Tensor(backend.complex(parts[0].native, parts[1].native), backend, dtype)
    if not dtype.is_floating_point:
        raise NotImplementedError(
            f"{kind}: not implemented for {dtype.name}; samples are floating point (pass a "
            "float dtype, or use tw.randint for integers)"
        )
    check_ndim("rand" if kind == "uniform" else "randn", size, backend)
    if generator is None:
        native = getattr(backend, "random_" + kind)(size, *args, dtype)
    else:
        rnd.check_generator(generator, kind)
        if kind == "uniform":
            host = rnd.draw_uniform(generator, size, *args, dtype)
        else:
            host = rnd.draw_normal(generator, size, *args)
        native = backend.from_host(host, dtype)
    return Tensor(native, backend, dtype)


def rand(
    *size: Any,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """Uniform samples in [0, 1)."""
    if dtype is not None:
        dtype = dtype_argument("rand", dtype)
    shape = _sizes("rand", size, storage)
    sample = _random("uniform", shape, dtype, device, generator, 0.0, 1.0)
    return _finish(sample, requires_grad)


def randn(
    *size: Any,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """Standard normal samples."""
    if dtype is not None:
        dtype = dtype_argument("randn", dtype)
    shape = _sizes("randn", size, storage)
    sample = _random("normal", shape, dtype, device, generator, 0.0, 1.0)
    return _finish(sample, requires_grad)


def rand_like(
    input: Tensor,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("rand_like", dtype)
    _storage_options("rand_like", storage, _LAYOUT_OPTIONS)
    return _random_like("uniform", input, generator, dtype, device, requires_grad, storage)


def randn_like(
    input: Tensor,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    if dtype is not None:
        dtype = dtype_argument("randn_like", dtype)
    _storage_options("randn_like", storage, _LAYOUT_OPTIONS)
    return _random_like("normal", input, generator, dtype, device, requires_grad, storage)


def _random_like(
    kind: str,
    input: Tensor,
    generator: rnd.Generator | None,
    dtype: DType | None,
    device: Any,
    requires_grad: bool,
    storage: dict,
) -> Tensor:
    """Samples of ``input``'s shape, laid out as :func:`_like_order` says (drawn in memory
    order, as PyTorch's kernels fill a new tensor)."""
    like = _like(input, dtype, device)
    sample = _made_in_order(
        lambda shape: _random(kind, shape, like["dtype"], like["device"], generator, 0.0, 1.0),
        input.shape,
        _like_order(input, storage),
    )
    return _finish(sample, requires_grad)


def uniform(
    size: tuple, low: float, high: float, like: Tensor, generator: rnd.Generator | None = None
) -> Tensor:
    """Uniform samples in [low, high) of ``like``'s dtype, on its device (for ``uniform_``)."""
    return _random("uniform", tuple(size), like.dtype, like, generator, float(low), float(high))


def normal(
    size: tuple, mean: float, std: float, like: Tensor, generator: rnd.Generator | None = None
) -> Tensor:
    """Normal samples of ``like``'s dtype, on its device (for ``normal_``)."""
    return _random("normal", tuple(size), like.dtype, like, generator, float(mean), float(std))


def randint(
    *bounds: Any,
    low: Any = None,
    high: Any = None,
    size: Any = None,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``, each
    argument by position or by keyword (``randint(3, size=s)``, ``randint(high=3, size=s)``)."""
    if dtype is not None:
        dtype = dtype_argument("randint", dtype)
    _storage_options("randint", storage)
    low, high, size = _randint_arguments(bounds, low, high, size)
    if not isinstance(size, (tuple, list)):
        raise TypeError(
            "randint(): argument 'size' must be a tuple of ints, got "
            f"{type(size).__name__}; call randint(high, size) or randint(low, high, size)"
        )
    shape = _size((tuple(size),), "randint")
    low, high = (_bound(v) for v in (low, high))
    sample = _integers(low, high, shape, generator, dtype or dtypes.int64, device)
    return _finish(sample, requires_grad)


#: PyTorch's two overloads of randint, by their parameters in order: a lone bound is high.
_RANDINT_FORMS = (("high", "size"), ("low", "high", "size"))


def _randint_arguments(bounds: tuple, low: Any, high: Any, size: Any) -> tuple[Any, Any, Any]:
    """(low, high, size) of the first of PyTorch's overloads that takes the positional
    ``bounds`` and the keywords given (None: not given), as PyTorch's argument parser picks."""
    given = {k: v for k, v in (("low", low), ("high", high), ("size", size)) if v is not None}
    for form in _RANDINT_FORMS:
        if len(bounds) > len(form):
            continue
        named = dict(zip(form, bounds))
        if set(named) & set(given) or set(given) - set(form):
            continue  # a parameter twice, or one the overload lacks
        named.update(given)
        if len(named) == len(form):
            return named.get("low", 0), named["high"], named["size"]
    keywords = ", ".join(f"{k}={type(v).__name__}" for k, v in given.items())
    got = ", ".join([type(b).__name__ for b in bounds] + ([keywords] if keywords else []))
    raise TypeError(
        f"randint() received an invalid combination of arguments - got ({got}), but expected "
        "one of: (int high, tuple of ints size, ...) or (int low, int high, tuple of ints "
        "size, ...)"
    )


def _bound(value: Any) -> int:
    """A bound of ``randint``: an int (an integer 0-d tensor or NumPy int counts as one)."""
    if _integer_tensor(value) and value.ndim == 0:
        return int(value.item())
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"randint(): the bounds must be ints, got {type(value).__name__} ({value!r})"
        )
    return int(value)


def randint_like(
    input: Tensor,
    low: int = 0,
    high: Any = None,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """Integers in [low, high) of ``input``'s shape: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``."""
    if dtype is not None:
        dtype = dtype_argument("randint_like", dtype)
    _storage_options("randint_like", storage, _LAYOUT_OPTIONS)
    if high is None:
        low, high = 0, low
    low, high = _bound(low), _bound(high)  # (floats are TypeErrors, as PyTorch's overloads)
    like = _like(input, dtype, device)
    sample = _made_in_order(
        lambda shape: _integers(low, high, shape, generator, like["dtype"], like["device"]),
        input.shape,
        _like_order(input, storage),
    )
    return _finish(sample, requires_grad)


def _integers(
    low: int, high: Any, shape: tuple, generator: Any, dtype: DType, device: Any
) -> Tensor:
    """Uniform integers in [low, high) as ``dtype`` (drawn as int64 for float and bool)."""
    if high <= low:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    if dtype.is_complex:
        raise RuntimeError(
            f"randint: integers are drawn as integral, floating-point or bool dtypes, not "
            f"{dtype.name}; draw them as int64 and convert, e.g. .to(tw.{dtype.name})"
        )
    lowest, highest = _drawable(dtype)
    for bound, name in ((low, "from"), (high - 1, "to - 1")):
        if lowest <= bound <= highest:
            continue
        if dtype.is_floating_point and dtype is not dtypes.float16:  # PyTorch only warns
            warnings.warn(
                f"randint: {name} is out of bounds [{lowest}, {highest}]: {dtype.name} holds "
                "the integers of a discrete uniform distribution only within it",
                UserWarning,
                stacklevel=3,
            )
        else:
            raise RuntimeError(
                f"randint: {name} is out of bounds for {dtype.name}: {bound} is outside "
                f"[{lowest}, {highest}]"
            )
    backend = backend_for(device)
    _check_dtype(dtype, backend)
    check_ndim("randint", shape, backend)
    drawn = dtype if dtype.kind in "iu" else dtypes.int64
    if generator is None:
        native = backend.random_integers(shape, low, int(high), drawn)
    else:
        host = rnd.draw_integers(rnd.check_generator(generator, "randint"), shape, low, int(high))
        native = backend.from_host(host, drawn)
    if drawn is not dtype:
        native = backend.cast(native, dtype)
    return Tensor(native, backend, dtype)


#: Bits of the significand of each float dtype: randint draws integers it holds exactly.
_DIGITS = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 53}


def _drawable(dtype: DType) -> tuple[int, int]:
    """The integers ``randint`` may draw as ``dtype`` (PyTorch's range check)."""
    if dtype is dtypes.bool_:
        return 0, 1
    if dtype.kind in "iu":
        return overflow.int_range(dtype)
    digits = _DIGITS.get(dtype, 53)
    return -(2**digits), 2**digits


def _integer_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) and value.dtype.kind in "iu" and value.numel() == 1


#: The largest n whose permutation a float dtype holds exactly (every integer up to it).
_EXACT_FLOAT_LIMITS = {
    dtypes.float16: (2049, "Half", "2049"),
    dtypes.float32: (2**24 + 1, "Float", "2^24+1"),
    dtypes.float64: (2**53 + 1, "Double", "2^53+1"),
}


def randperm(
    n: int,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    """A random permutation of 0..n-1, drawn on the host (like PyTorch's CPU generator) from
    ``generator`` or the default generator."""
    if dtype is not None:
        dtype = dtype_argument("randperm", dtype)
    _storage_options("randperm", storage)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) and not _integer_tensor(n):
        raise TypeError(
            f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}"
        )
    n = int(n)  # an integer tensor of one element is read as its value, as PyTorch
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = dtype or dtypes.int64
    if dtype is dtypes.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if n and dtype.kind in "iu":
        overflow.fill_value(n - 1, dtype, "randperm")  # 300 numbers do not fit uint8
    if dtype in _EXACT_FLOAT_LIMITS and n > _EXACT_FLOAT_LIMITS[dtype][0]:
        # (PyTorch's CPU check; it has none for bfloat16)
        limit, name, spelled = _EXACT_FLOAT_LIMITS[dtype]
        raise RuntimeError(f"n cannot be greater than {spelled} for {name} type.")
    source = rnd.default_generator if generator is None else generator
    order = rnd.draw_permutation(rnd.check_generator(source, "randperm"), n)
    return tensor(order, dtype=dtype, device=device, requires_grad=requires_grad)
