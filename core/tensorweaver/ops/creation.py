"""Creating tensors: from data, filled, ranges and random, on the current or a named device."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorweaver import registry, selection
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.promotion import get_default_dtype
from tensorweaver.tensor import Tensor

_NUMPY_TO_DTYPE = {np.dtype(d.numpy_name): d for d in dtypes.ALL if d is not dtypes.bfloat16}
_seed: list[int] = []  # the last manual_seed, applied to backends created after it too


def backend_for(device: Any) -> Any:
    """The backend object for a ``device=`` argument (None: the current device)."""
    if device is None:
        backend = selection.current_backend()
    elif isinstance(device, Tensor):
        backend = device.backend
    else:
        backend = registry.backend_object(str(device))
    if _seed and getattr(backend, "_tw_seeded", None) != _seed[0]:
        _apply_seed(backend, _seed[0])
    return backend


def _apply_seed(backend: Any, seed: int) -> None:
    backend.seed(seed)
    try:
        backend._tw_seeded = seed
    except AttributeError:  # a backend with __slots__: it is reseeded on each lookup then
        pass


def manual_seed(seed: int) -> None:
    """Seed the random generator of every backend, now and for backends created later."""
    seed = int(seed)
    _seed[:] = [seed]
    for backend in registry.created_backends():
        _apply_seed(backend, seed)
    host_generator.seed(seed)


class _HostGenerator:
    """The host-side generator for work done on the CPU (randperm, data shuffling)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng()

    def seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)


host_generator = _HostGenerator()


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
    if kind in "biuf":
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
        host = _host_array(data)
        dtype = dtype or _infer_dtype(host, data)
    _check_dtype(dtype, backend)
    return _finish(Tensor(backend.from_host(host, dtype), backend, dtype), requires_grad)


def _host_array(data: Any) -> np.ndarray:
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flat(data)):
        data = _lists_of(data)
    try:
        return np.asarray(data)
    except ValueError as exc:
        raise ValueError(f"tensor(): the data is ragged or not numeric ({exc})") from None


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
    """``data`` as a tensor: a tensor already on that device and dtype is returned as is."""
    if isinstance(data, Tensor):
        out = data if device is None else data.to(device)
        return out if dtype is None else out.to(dtype)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return tensor(array)


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
    return Tensor(native, backend, dtypes.BY_NAME[name])


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
) -> Tensor:
    backend = backend_for(device)
    if dtype is None:
        dtype = (
            dtypes.bool_
            if isinstance(fill_value, bool)
            else dtypes.int64
            if isinstance(fill_value, int)
            else get_default_dtype()
        )
    _check_dtype(dtype, backend)
    native = backend.full(
        _size((size,) if isinstance(size, int) else (tuple(size),)), fill_value, dtype
    )
    return _finish(Tensor(native, backend, dtype), requires_grad)


def zeros(
    *size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return full(
        _size(size),
        0,
        dtype=dtype or get_default_dtype(),
        device=device,
        requires_grad=requires_grad,
    )


def ones(
    *size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return full(
        _size(size),
        1,
        dtype=dtype or get_default_dtype(),
        device=device,
        requires_grad=requires_grad,
    )


empty = zeros  # the IR has no uninitialised memory; zeros cost the same


def _like(x: Tensor, dtype: DType | None, device: Any) -> dict:
    return {"dtype": dtype or x.dtype, "device": device if device is not None else x}


def zeros_like(
    x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return full(x.shape, 0, **_like(x, dtype, device), requires_grad=requires_grad)


def ones_like(
    x: Tensor, *, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return full(x.shape, 1, **_like(x, dtype, device), requires_grad=requires_grad)


empty_like = zeros_like


def full_like(
    x: Tensor,
    fill_value: Any,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    return full(x.shape, fill_value, **_like(x, dtype, device), requires_grad=requires_grad)


def zeros_like_shape(like: Tensor, shape: tuple) -> Tensor:
    """Zeros of ``shape`` on ``like``'s device and dtype (for gradient rules)."""
    return Tensor(like.backend.full(shape, 0, like.dtype), like.backend, like.dtype)


def arange(
    start: Any,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: DType | None = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        dtype = (
            dtypes.int64
            if all(isinstance(v, int) for v in (start, end, step))
            else get_default_dtype()
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
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dtype = dtype or get_default_dtype()
    host = np.linspace(start, end, steps, dtype=np.float64)
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


def _random(kind: str, size: tuple, dtype: DType | None, device: Any, *args: Any) -> Tensor:
    backend = backend_for(device)
    dtype = dtype or get_default_dtype()
    _check_dtype(dtype, backend)
    if not dtype.is_floating_point:
        raise TypeError(f"{kind}: expected a floating-point dtype, got {dtype.name}")
    native = getattr(backend, "random_" + kind)(size, *args, dtype)
    return Tensor(native, backend, dtype)


def rand(
    *size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return _finish(_random("uniform", _size(size), dtype, device, 0.0, 1.0), requires_grad)


def randn(
    *size: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    return _finish(_random("normal", _size(size), dtype, device, 0.0, 1.0), requires_grad)


def rand_like(x: Tensor, *, dtype: DType | None = None) -> Tensor:
    return _random("uniform", x.shape, dtype or x.dtype, x, 0.0, 1.0)


def randn_like(x: Tensor, *, dtype: DType | None = None) -> Tensor:
    return _random("normal", x.shape, dtype or x.dtype, x, 0.0, 1.0)


def uniform(size: tuple, low: float, high: float, like: Tensor) -> Tensor:
    return _random("uniform", tuple(size), like.dtype, like, float(low), float(high))


def normal(size: tuple, mean: float, std: float, like: Tensor) -> Tensor:
    return _random("normal", tuple(size), like.dtype, like, float(mean), float(std))


def randint(
    low: int, high: Any = None, size: Any = None, *, dtype: DType | None = None, device: Any = None
) -> Tensor:
    """Integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: the size argument is required")
    if high <= low:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    backend = backend_for(device)
    dtype = dtype or dtypes.int64
    _check_dtype(dtype, backend)
    native = backend.random_integers(
        _size((size,) if isinstance(size, int) else (tuple(size),)), int(low), int(high), dtype
    )
    return Tensor(native, backend, dtype)


def randperm(n: int, *, dtype: DType | None = None, device: Any = None) -> Tensor:
    """A random permutation of 0..n-1 (drawn on the host, like PyTorch's CPU generator)."""
    return tensor(host_generator.rng.permutation(n), dtype=dtype or dtypes.int64, device=device)
