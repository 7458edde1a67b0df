"""Creating tensors: from data, filled, ranges and random, on the current or a named device."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tensorweaver import random as rnd
from tensorweaver import selection
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.layout import strided
from tensorweaver.memory_formats import memory_format
from tensorweaver.ops import overflow
from tensorweaver.ops.rank import check_ndim
from tensorweaver.promotion import default_complex_dtype, get_default_dtype
from tensorweaver.tensor import Tensor, _mark_shared, _shares_host

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


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def _infer_dtype(array: np.ndarray, data: Any) -> DType:
    kind = array.dtype.kind
    if kind == "f" and not isinstance(data, (np.ndarray, np.generic)):
        return get_default_dtype()  # Python floats
    if kind == "c" and not isinstance(data, (np.ndarray, np.generic)):
        return default_complex_dtype()  # Python complex numbers
    if kind in "biufc":
        found = _NUMPY_TO_DTYPE.get(array.dtype)
        if found is not None:
            return found
        if kind == "u":
            raise TypeError(f"tensor(): unsigned dtype {array.dtype} is not supported (only uint8)")
    raise TypeError(
        f"tensor(): cannot make a tensor from data of type {array.dtype} "
        f"({type(data).__name__}); use numbers, bools, nested lists of them, or NumPy arrays"
    )


def tensor(
    data: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays or tensors)."""
    if isinstance(data, Tensor):
        backend = data.backend if device is None else backend_for(device)
        host = data.backend.to_host(data.native)
        dtype = dtype or data.dtype
    else:
        backend = backend_for(device)
        host = _host_array(data, dtype)
        dtype = dtype or _infer_dtype(host, data)
        if dtype.kind in "iu" and not isinstance(data, np.ndarray):
            overflow.check_fits(host, dtype, "tensor()")
    _check_dtype(dtype, backend)
    check_ndim("tensor", host.shape, backend)
    return _finish(Tensor(backend.from_host(host, dtype), backend, dtype), requires_grad)


def _host_array(data: Any, dtype: DType | None) -> np.ndarray:
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = _lists_of(data)
    try:
        array = np.asarray(data)
    except ValueError as exc:
        raise ValueError(f"tensor(): the data is ragged or not numeric ({exc})") from None
    return array if isinstance(data, np.ndarray) else overflow.host_array(array, data, dtype)


def _flat(data: Any) -> Any:
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _lists_of(data: Any) -> Any:
    if isinstance(data, Tensor):
        return data.backend.to_host(data.native)
    if isinstance(data, (list, tuple)):
        return [_lists_of(x) for x in data]
    return data


def as_tensor(data: Any, dtype: DType | None = None, device: Any = None) -> Tensor:
    """``data`` as a tensor: a tensor already on that device and dtype is returned as is, and
    a NumPy array on the current device, in its own dtype, shares its memory as with
    :func:`from_numpy` (where the backend shares host memory)."""
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


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor on the current device over ``array``'s values, as ``torch.from_numpy``.

    Where the backend shares host memory (NumPy; torch on the CPU) the tensor uses the
    array's own memory, without a copy: a write on either side, an in-place tensor method
    included, is seen by the other (:mod:`tensorweaver.tensor` says how far). Elsewhere (torch
    on a GPU, cuPyNumeric) the tensor holds a copy. As in PyTorch, a read-only array gives a
    UserWarning (the tensor reads its memory, but an in-place method gives the tensor a copy
    of its own rather than write into it); another byte order or a negative stride is a
    ValueError; a dtype TensorWeaver lacks (uint16, complex256, ...) is a TypeError.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    dtype = _from_numpy_dtype(array)
    backend = backend_for(None)
    _check_dtype(dtype, backend)
    check_ndim("from_numpy", array.shape, backend)
    writeable = array.flags.writeable
    if not writeable:
        warnings.warn(
            "from_numpy: the given NumPy array is not writable; the tensor reads its memory, "
            "and an in-place operation on the tensor gives it a copy of its own. Copy the "
            "array (array.copy()) to silence this",
            UserWarning,
            stacklevel=2,
        )
    native = backend.wrap_host(array) if _shares_host(backend) else None
    if native is None:
        return Tensor(backend.from_host(array, dtype), backend, dtype)
    out = Tensor(native, backend, dtype)
    _mark_shared(out, writes=writeable)
    return out


def _from_numpy_dtype(array: np.ndarray) -> DType:
    """The dtype ``from_numpy`` gives ``array``, after PyTorch's checks on its layout."""
    dt = array.dtype
    if not dt.isnative:
        raise ValueError(
            f"from_numpy: the array has byte order {dt.byteorder!r}, different from the native "
            "byte order; conversion between byte orders is not supported (convert first with "
            "array.astype(array.dtype.newbyteorder('='))"
        )
    found = _NUMPY_TO_DTYPE.get(dt)
    if found is None:
        raise TypeError(
            f"from_numpy: can't convert np.ndarray of type numpy.{dt.type.__name__}; the only "
            "supported types are complex128, complex64, float64, float32, float16, int64, "
            "int32, int16, int8, uint8 and bool (convert first, e.g. array.astype(np.int64))"
        )
    if any(s < 0 for s in array.strides):
        raise ValueError(
            "from_numpy: at least one stride of the array is negative, which tensors do not "
            "support; pass a copy (array.copy())"
        )
    if any(s % dt.itemsize for s in array.strides):
        raise ValueError(
            f"from_numpy: the array's strides {array.strides} are not a multiple of its "
            f"element size ({dt.itemsize} bytes); pass a copy (array.copy())"
        )
    return found


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


def _size(args: tuple) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for a in args:
        if not isinstance(a, (int, np.integer)):
            raise TypeError(f"sizes must be integers, got {list(args)}")
        if a < 0:
            raise RuntimeError(
                f"trying to create a tensor with negative dimension {a}: sizes {list(args)}"
            )
    return tuple(int(a) for a in args)


def full(
    size: Any,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("full", storage)
    backend = backend_for(device)
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
    _check_dtype(dtype, backend)
    shape = _size((size,) if isinstance(size, int) else (tuple(size),))
    check_ndim("full", shape, backend)
    native = backend.full(shape, overflow.fill_value(fill_value, dtype, "full()"), dtype)
    return _finish(Tensor(native, backend, dtype), requires_grad)


def zeros(
    *size: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("zeros", storage)
    return full(
        _size(size),
        0,
        dtype=dtype or get_default_dtype(),
        device=device,
        requires_grad=requires_grad,
    )


def ones(
    *size: Any,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("ones", storage)
    return full(
        _size(size),
        1,
        dtype=dtype or get_default_dtype(),
        device=device,
        requires_grad=requires_grad,
    )


empty = zeros  # the IR has no uninitialised memory; zeros cost the same


_STORAGE_OPTIONS = ("layout", "pin_memory", "memory_format")


def _storage_options(fn: str, options: dict) -> None:
    """PyTorch's ``layout=``, ``pin_memory=`` and ``memory_format=`` keywords, checked: every
    tensor here is strided and laid out densely, so the only layout is ``tw.strided``, and a
    memory format (``tw.channels_last``...) changes no value, only the strides PyTorch would
    pick; pinned memory is host memory as any other here."""
    for name, value in options.items():
        if name not in _STORAGE_OPTIONS:
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
    return {"dtype": dtype or x.dtype, "device": device if device is not None else x}


def zeros_like(
    x: Tensor,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("zeros_like", storage)
    return full(x.shape, 0, **_like(x, dtype, device), requires_grad=requires_grad)


def ones_like(
    x: Tensor,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("ones_like", storage)
    return full(x.shape, 1, **_like(x, dtype, device), requires_grad=requires_grad)


empty_like = zeros_like


def full_like(
    x: Tensor,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("full_like", storage)
    return full(x.shape, fill_value, **_like(x, dtype, device), requires_grad=requires_grad)


def zeros_like_shape(like: Tensor, shape: tuple) -> Tensor:
    """Zeros of ``shape`` on ``like``'s device and dtype (for gradient rules)."""
    check_ndim("zeros", shape, like.backend)
    return Tensor(like.backend.full(shape, 0, like.dtype), like.backend, like.dtype)


def _as_number(value: Any) -> Any:
    if isinstance(value, Tensor) or isinstance(value, np.generic):
        return value.item()
    return value


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    # 0-d tensors and NumPy scalars count as the Python numbers they hold (an int64 tensor
    # bound gives an int64 range, as in PyTorch)
    start, end, step = (_as_number(v) for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    for bound in (start, end):
        if not math.isfinite(bound):
            raise RuntimeError(
                f"arange: unsupported range: {start} -> {end} (bounds must be finite)"
            )
    if (end - start) * step < 0:
        raise RuntimeError(
            f"arange: upper bound and lower bound inconsistent with step sign: from {start} to "
            f"{end} by {step}; use a step of the other sign"
        )
    if dtype is None:
        dtype = (
            dtypes.int64
            if all(isinstance(v, int) for v in (start, end, step))
            else get_default_dtype()
        )
    if dtype.is_complex:
        raise NotImplementedError(
            f"arange(): not implemented for {dtype.name}; make a real range and convert it, "
            f"e.g. tw.arange(n).to(tw.{dtype.name})"
        )
    backend = backend_for(device)
    _check_dtype(dtype, backend)
    return _finish(Tensor(backend.arange(start, end, step, dtype), backend, dtype), requires_grad)


def linspace(
    start: float,
    end: float,
    steps: int,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (complex when
    either end is a complex number)."""
    ends_complex = isinstance(start, complex) or isinstance(end, complex)
    dtype = dtype or (default_complex_dtype() if ends_complex else get_default_dtype())
    exact = np.complex128 if ends_complex or dtype.is_complex else np.float64
    host = np.linspace(start, end, steps, dtype=exact)
    return tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


def eye(
    n: int,
    m: int | None = None,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    m = n if m is None else m
    backend = backend_for(device)
    dtype = dtype or get_default_dtype()
    rows = backend.reshape(backend.arange(0, n, 1, dtypes.int64), (n, 1))
    cols = backend.reshape(backend.arange(0, m, 1, dtypes.int64), (1, m))
    mask = backend.eq(backend.expand(rows, (n, m)), backend.expand(cols, (n, m)))
    return _finish(Tensor(backend.cast(mask, dtype), backend, dtype), requires_grad)


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
        raise TypeError(f"{kind}: expected a floating-point dtype, got {dtype.name}")
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
) -> Tensor:
    """Uniform samples in [0, 1)."""
    sample = _random("uniform", _size(size), dtype, device, generator, 0.0, 1.0)
    return _finish(sample, requires_grad)


def randn(
    *size: Any,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Standard normal samples."""
    sample = _random("normal", _size(size), dtype, device, generator, 0.0, 1.0)
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
    _storage_options("rand_like", storage)
    return _random_like("uniform", input, generator, dtype, device, requires_grad)


def randn_like(
    input: Tensor,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
    **storage: Any,
) -> Tensor:
    _storage_options("randn_like", storage)
    return _random_like("normal", input, generator, dtype, device, requires_grad)


def _random_like(
    kind: str,
    input: Tensor,
    generator: rnd.Generator | None,
    dtype: DType | None,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    like = _like(input, dtype, device)
    sample = _random(kind, input.shape, like["dtype"], like["device"], generator, 0.0, 1.0)
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
    low: int,
    high: Any = None,
    size: Any = None,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: the size argument is required")
    shape = _size((size,) if isinstance(size, int) else (tuple(size),))
    return _integers(int(low), high, shape, generator, dtype or dtypes.int64, device)


def randint_like(
    input: Tensor,
    low: int = 0,
    high: Any = None,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
) -> Tensor:
    """Integers in [low, high) of ``input``'s shape: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``."""
    if high is None:
        low, high = 0, low
    like = _like(input, dtype, device)
    return _integers(int(low), high, input.shape, generator, like["dtype"], like["device"])


def _integers(
    low: int, high: Any, shape: tuple, generator: Any, dtype: DType, device: Any
) -> Tensor:
    """Uniform integers in [low, high) as ``dtype`` (drawn as int64 for float and bool)."""
    if high <= low:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    if dtype.is_complex:
        raise RuntimeError(
            f"randint: integers are drawn as integral, floating-point or bool dtypes, not "
            f"{dtype.name}; draw them as int64 and convert, e.g. .to(tw.{dtype.name})"
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


def _integer_tensor(value: Any) -> bool:
    return isinstance(value, Tensor) and value.dtype.kind in "iu" and value.numel() == 1


def randperm(
    n: int,
    *,
    generator: rnd.Generator | None = None,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A random permutation of 0..n-1, drawn on the host (like PyTorch's CPU generator) from
    ``generator`` or the default generator."""
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
    source = rnd.default_generator if generator is None else generator
    order = rnd.draw_permutation(rnd.check_generator(source, "randperm"), n)
    return tensor(order, dtype=dtype, device=device, requires_grad=requires_grad)
