"""The NumPy backend: every primitive of :mod:`tensorweaver.contract.ir` as a plain NumPy call.

The core guarantees each primitive's preconditions (see ir.py), so nothing here checks its
arguments: a method is the NumPy expression plus what the contract needs on top of it:

* **Exact result dtypes.** Reductions and ``cumsum`` pass ``dtype=`` (NumPy widens small
  ints); ``sign`` of bool is done by hand, since NumPy refuses it.
* **Quiet IEEE arithmetic.** Primitives that can raise a floating-point flag run with
  NumPy's warnings off (:mod:`._quiet`); the others are bare calls.
* **0-d results may be NumPy scalars** (``np.float32(1.0)``), as NumPy's ufuncs return them.
  They have the same array interface (``shape``, ``dtype``, ``astype``, ``reshape``) and are
  immutable, so they serve as the backend's 0-d arrays without a conversion per op.
* **Host memory is shared** (:mod:`.host`): ``tw.from_numpy`` and ``Tensor.numpy()`` share
  arrays with the caller, so no primitive returns a view of an input where PyTorch's op
  copies (``flip``, ``sign`` of bool).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided
from tensorweaver.contract import dtypes
from tensorweaver.contract.cpu_loops import (
    EVERY,
    HALF_STEP,
    cached_scalar_loop_mask,
    loop_order,
)
from tensorweaver.contract.dtypes import DType
from tensorweaver.contract.records import DeviceRecord

from tensorweaver_numpy import _erf
from tensorweaver_numpy._quiet import ignore_errors, quiet, quiet_ufunc, restore_errors
from tensorweaver_numpy.allocation import allocation_error
from tensorweaver_numpy.compile import CompiledGraphs
from tensorweaver_numpy.complex import ComplexNumbers
from tensorweaver_numpy.fft import FourierTransforms
from tensorweaver_numpy.foreach import ForeachOps
from tensorweaver_numpy.fused import FusedOps
from tensorweaver_numpy.host import HostMemory
from tensorweaver_numpy.layouts import (
    binary_ufunc,
    cast_layout,
    channels_last,
    iterator_layout,
    unary_layout,
    unary_ufunc,
)
from tensorweaver_numpy.linalg import LinearAlgebra
from tensorweaver_numpy.pooling import MaxPooling
from tensorweaver_numpy.special import SpecialFunctions

A = np.ndarray
Shape = Sequence[int]
Axes = tuple[int, ...]

_SUPPORTED = (
    dtypes.bool_,
    dtypes.uint8,
    dtypes.int8,
    dtypes.int16,
    dtypes.int32,
    dtypes.int64,
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
    dtypes.complex64,
    dtypes.complex128,
)
_NP: dict[DType, np.dtype] = {d: np.dtype(d.numpy_name) for d in _SUPPORTED}
_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_F64 = np.dtype(np.float64)
#: Unsigned words of each item size, for the branch-free ``where``.
_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_BITWISE_WHERE_MIN = 4096  # below this, np.where's own overhead is smaller
#: A random stream's state (get_rng_state): PCG64's 128-bit state and increment, then its
#: buffered 32-bit half (flag, value), little-endian.
_PCG64_SIZES = (16, 16, 4, 4)
_PCG64_BYTES = sum(_PCG64_SIZES)


def _draw_dtype(dt: np.dtype) -> type:
    # The Generator draws float32 and float64 natively; float16 is drawn as float64, rounded.
    return np.float32 if dt == _F32 else np.float64


#: Real ``pow``: NumPy's power, its result laid out as torch's (warnings off; a 0-d
#: exponent as torch's pow(Tensor, Scalar), which lays out by the base alone).
_power = binary_ufunc(np.power, bounds=True)


def _power_in_double(a: A, b: A, order: str = "K") -> A:
    """``a ** b`` of float32 operands as torch's CPU loop computes it: C's pow in double,
    rounded once (``std::pow`` of a float and a double exponent, or glibc's powf; its
    vectorized lanes, SLEEF's powf, agree in ~98% of elements). NumPy's float32 power
    (AVX-512) is an ulp off in ~1/5 of them; its float16 power agrees with torch's. From
    :data:`_POWER_IN_DOUBLE_MAX` elements NumPy's float32 power, ~3.5x cheaper: there torch's
    SLEEF lanes are not correctly rounded either, and large powers are not optimizer scalars."""
    if not a.ndim and not b.ndim:  # (NumPy's scalar power: a third of the ufunc's 5 us)
        return _F32.type(_F64.type(a) ** _F64.type(b))
    if b.dtype == _F64:  # a number exponent as a double: see _number_power
        return _number_power(a, b, order)
    if a.size >= _POWER_IN_DOUBLE_MAX or b.size >= _POWER_IN_DOUBLE_MAX:
        return np.power(a, b, order=order)
    return np.power(a, b, dtype=_F64, order=order).astype(_F32)


def _number_power(a: A, b: A, order: str) -> A:
    """float32 ``a`` to the power of the number ``b`` (a float64 0-d array) as torch's
    pow_tensor_scalar: its scalar loop (:func:`cached_scalar_loop_mask`; ``HALF_STEP``, 32,
    is also 2 AVX-512 vectors of float32) with the double exponent, its vector lanes with the
    exponent cast to float (each in double, rounded once as :func:`_power_in_double`)."""
    if a.size >= _POWER_IN_DOUBLE_MAX:
        return np.power(a, b.astype(_F32), order=order)
    if a.flags.c_contiguous:  # one loop over all: its last size % 32 elements are scalar
        tail = a.size % HALF_STEP
        if tail == a.size:
            return np.power(a, b, dtype=_F64).astype(_F32)
        wide = np.power(a, b.astype(_F32), dtype=_F64)
        if tail:
            flat = wide.reshape(-1)
            np.power(a.reshape(-1)[-tail:], b, out=flat[-tail:], dtype=_F64)
        return wide.astype(_F32)
    scalar = cached_scalar_loop_mask(a.shape, (a.strides,), a.itemsize)
    if scalar is EVERY:
        return np.power(a, b, dtype=_F64, order=order).astype(_F32)
    wide = np.power(a, b.astype(_F32), dtype=_F64, order=order)
    if scalar is not None:
        np.copyto(wide, np.power(a, b, dtype=_F64, order=order), where=scalar)
    return wide.astype(_F32)


#: Elements from which :func:`_power_in_double` takes NumPy's float32 power.
_POWER_IN_DOUBLE_MAX = 1 << 16


#: ``pow`` of float32 operands: :func:`_power_in_double`, laid out as torch's.
_float32_power = binary_ufunc(_power_in_double, bounds=True)  # type: ignore[arg-type]

#: The unbuffered ufunc each reduction of ``scatter_reduce`` applies (NaN propagates).
_SCATTER_UFUNCS = {"amax": np.maximum, "amin": np.minimum, "prod": np.multiply}


#: Rows a sum over outer axes adds one after another before its pairwise stage (a bound of
#: about ``(_BLOCK + log2(n / _BLOCK)) * eps`` on its relative error, as a pairwise sum's).
_BLOCK = 16
#: Up to this many elements, a sum off NumPy's pairwise path of more than ``_BLOCK`` rows
#: accumulates in the next wider dtype (rounded once): cheaper than the blocked pairwise
#: sum's dozen NumPy calls, if 3 us dearer than NumPy's plain sum at 8192 float32. (float64
#: and complex128 stay as they are: at most 8192 adds one after another, 1e-12 at worst.)
_WIDEN_MAX = 8192
_WIDER = {
    np.dtype(np.float32): np.dtype(np.float64),
    np.dtype(np.complex64): np.dtype(np.complex128),
}
#: Dtypes whose slab sums :func:`_sum_leading` gets from BLAS, from half this many elements
#: (below, its call costs what it saves) up to this many (a matrix of ``_BLOCK`` rows that
#: stays in cache: beyond, BLAS is no faster, and threaded).
_GEMV_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_GEMV_MAX = 1 << 17
#: ``_TRAILING[n]`` / ``_LEADING[n]``: the axes tuples of an n-d array that end at its last
#: axis / start at its first (NumPy arrays have at most 64 axes).
_TRAILING = [frozenset(tuple(range(k, n)) for k in range(n)) for n in range(65)]
_LEADING = [frozenset(tuple(range(k)) for k in range(1, n + 1)) for n in range(65)]


def _sum_leading(b: A, dtype: np.dtype) -> A:
    """``b`` summed over its first axis: ``_BLOCK`` slabs of its rows added one after another
    (each add one vectorized pass), then those sums pairwise, halving in place."""
    n = b.shape[0]
    if n <= 2 * _BLOCK:  # few rows: as accurate one after another
        return np.add.reduce(b, axis=0, dtype=dtype)
    whole = n - n % _BLOCK
    slabs = b[:whole]
    if b.dtype == dtype and dtype in _GEMV_DTYPES and _GEMV_MAX // 2 <= slabs.size <= _GEMV_MAX:
        # (the same sums of _BLOCK rows, as a matrix-vector product: 13 against 19 us of
        # one thread's time for float32 (256, 512), as fast as NumPy's plain column sum)
        part = np.ones(_BLOCK, dtype) @ slabs.reshape(_BLOCK, -1)
        part = part.reshape((-1,) + b.shape[1:])
    else:
        part = np.add.reduce(slabs.reshape((_BLOCK, -1) + b.shape[1:]), axis=0, dtype=dtype)
    if whole < n:
        part[0] += np.add.reduce(b[whole:], axis=0, dtype=dtype)
    n = len(part)
    while n > _BLOCK:
        half = n // 2
        np.add(part[:half], part[half : 2 * half], out=part[:half])
        if n % 2:
            part[0] += part[n - 1]
        n = half
    return np.add.reduce(part[:n], axis=0)


def _float_sum(a: A, axes: Axes, keepdims: bool, dtype: np.dtype) -> A:
    """The sum of float (or complex) ``a`` over ``axes`` in ``dtype``, accurate on every axis
    and layout, for a reduction that is not over the trailing axes of a C-ordered array.

    NumPy's reduction adds pairwise only along the run of reduced axes it loops over
    innermost (in memory order); across the others it adds one slice after another, and
    the error grows with their count: float32 column sums of 10000 rows near 1e4 were off by
    4e-5. That run is reduced by NumPy (pairwise); the rest by :func:`_sum_leading`.
    """
    if a.flags.c_contiguous and axes in _LEADING[a.ndim]:  # batch axes: no reordering
        outer = math.prod(a.shape[: len(axes)])
        if outer <= _BLOCK:  # one slab's rows one after another (as torch's first level)
            return np.add.reduce(a, axis=axes, dtype=dtype, keepdims=keepdims)
        if a.size > _WIDEN_MAX:
            total = _sum_leading(a.reshape((outer,) + a.shape[len(axes) :]), dtype)
            return total.reshape((1,) * len(axes) + total.shape) if keepdims else total
    if a.size <= _WIDEN_MAX:
        wide = np.add.reduce(a, axis=axes, dtype=_WIDER.get(dtype, dtype), keepdims=keepdims)
        return wide.astype(dtype, copy=False)
    summed = {i % a.ndim for i in axes}
    # Axes in memory order (1-long and broadcast axes, whose strides hold no memory, first;
    # then largest stride first), as NumPy's iterator orders them.
    order = sorted(
        range(a.ndim), key=lambda i: (a.shape[i] > 1 and a.strides[i] != 0, -abs(a.strides[i]))
    )
    b = a.transpose(order)
    reduced = [k for k, i in enumerate(order) if i in summed]
    inner = []  # the reduced axes NumPy coalesces into its innermost, pairwise loop
    k = b.ndim - 1
    while (
        reduced
        and reduced[-1] == k
        and (not inner or b.strides[k] == b.strides[k + 1] * b.shape[k + 1])
    ):
        inner.append(reduced.pop())
        k -= 1
    outer = math.prod(b.shape[r] for r in reduced)
    if outer <= _BLOCK:  # few slices one after another: as accurate
        return np.add.reduce(a, axis=axes, dtype=dtype, keepdims=keepdims)
    if inner:
        b = np.add.reduce(b, axis=tuple(inner), dtype=dtype)
    kept = [k for k in range(b.ndim) if k not in reduced]
    b = b.transpose(reduced + kept).reshape((outer,) + tuple(b.shape[k] for k in kept))
    total = _sum_leading(b, dtype)
    kept = [i for i in order if i not in summed]  # total's axes, to be put back in order
    if kept != sorted(kept):
        total = np.ascontiguousarray(total.transpose(np.argsort(kept)))
    if keepdims:
        total = total.reshape([1 if i in summed else n for i, n in enumerate(a.shape)])
    return total


@quiet
def _sum(a: A, axes: Axes, keepdims: bool) -> A:
    dtype = a.dtype
    if a.flags.c_contiguous and axes in _TRAILING[a.ndim] or dtype.kind not in "fc":
        # (over a C-ordered array's last axes NumPy already adds pairwise)
        if dtype == _F16:  # accumulated in float32, as PyTorch does for half types
            return np.add.reduce(a, axis=axes, dtype=_F32, keepdims=keepdims).astype(_F16)
        return np.add.reduce(a, axis=axes, dtype=dtype, keepdims=keepdims)
    if dtype == _F16:
        return _float_sum(a, axes, keepdims, _F32).astype(_F16)
    return _float_sum(a, axes, keepdims, dtype)


def _row_major(out: A) -> A:
    """``out`` in C order. NumPy's reductions and ``concatenate`` keep a transposed input's
    column-major order, where torch's results are contiguous (``Tensor.stride()`` shows it)."""
    return out if out.flags.c_contiguous else np.ascontiguousarray(out)


def _reduced(out: A, a: A, keepdims: bool) -> A:
    """A reduction ``out`` of ``a`` in C order (:func:`_row_major`), a kept size-one axis
    given C order's stride too, as torch's: NumPy's ``keepdims`` gives it ``a``'s layout's
    (a channels_last ``a``'s channels keep stride 1), which only a C-ordered ``a`` keeps C."""
    out = _row_major(out)
    if keepdims and not a.flags.c_contiguous:
        return out.reshape(-1).reshape(out.shape)  # (a 1-d array reshaped: C strides)
    return out


def _torch_order(a: A) -> tuple[int, ...] | None:
    """The axes, outermost first, in which torch lays out a result like ``a`` that is no
    elementwise one (flip, argsort: ``empty_like``'s ``preserve_format``, the contract's
    ``loop_order`` of ``a``'s strides); None for C order (a C-ordered ``a``: told cheaply)."""
    if a.ndim < 2 or (a.flags.c_contiguous and 1 not in a.shape):
        return None  # (NumPy's C flag passes any stride of a size-1 axis, torch's loop not)
    order = loop_order(a.shape, (a.strides,))
    return None if order == tuple(range(a.ndim)) else order


def _seen_back(out: A, order: tuple[int, ...]) -> A:
    """``out``, made with its axes in ``order``, seen in the logical order again."""
    return out.transpose(tuple(order.index(axis) for axis in range(len(order))))


def _concatenate_channels_last(arrays: Sequence[A], axis: int) -> A:
    """``np.concatenate`` into a channels_last array (channels the fastest axis)."""
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    ndim = len(shape)
    stored = np.empty([shape[0], *shape[2:], shape[1]], dtype=arrays[0].dtype)
    out = stored.transpose(0, ndim - 1, *range(1, ndim - 1))
    return np.concatenate(arrays, axis=axis, out=out)


def _along_axis(index: A, axis: int) -> tuple[A, ...]:
    """The fancy index that pairs ``index`` (taken along ``axis``) with every other axis.

    ``a[_along_axis(index, axis)]`` is ``numpy.take_along_axis(a, index, axis)``, without its
    argument checks; the same tuple serves scatter and scatter_add.
    """
    ndim = index.ndim
    return tuple(
        index if d == axis else np.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
        for d, n in enumerate(index.shape)
    )


class NumpyBackend(
    FusedOps,
    MaxPooling,
    HostMemory,
    SpecialFunctions,
    LinearAlgebra,
    ComplexNumbers,
    FourierTransforms,
    ForeachOps,
    CompiledGraphs,
):
    """Arrays are ``numpy.ndarray`` (or NumPy scalars for 0-d results) on the host CPU."""

    def __init__(self, device: DeviceRecord) -> None:
        self.device = device
        self.dtypes = frozenset(_SUPPORTED)
        self._rng = np.random.Generator(np.random.PCG64())

    # data ---------------------------------------------------------------------------------

    @quiet
    def from_host(self, array: A, dtype: DType) -> A:
        return np.array(array, dtype=_NP[dtype])

    def to_host(self, a: A) -> A:
        return np.array(a)

    def from_dlpack(self, obj: object) -> A:
        return np.from_dlpack(obj)

    def full(self, shape: Shape, value: object, dtype: DType) -> A:
        if type(value) is float and dtype is dtypes.float16:
            # PyTorch reads a Python float into a half as double -> float32 -> half (rounded
            # twice); NumPy rounds the double once. Scalar operands come here too.
            value = np.float32(value)
        try:
            out = np.empty(shape, _NP[dtype])
        except (MemoryError, ValueError) as error:
            raise allocation_error("full", self.device.name, shape, _NP[dtype], error) from None
        if not out.size:  # NumPy 2's strides of 0 there: C order's, a view's come from them
            return out.reshape(-1).reshape(shape)
        out.fill(value)  # (np.full's copyto costs ~1 us more)
        return out

    @quiet  # (a float32 past its range is inf, as PyTorch's)
    def arange(self, start: float, stop: float, step: float, dtype: DType) -> A:
        dt = _NP[dtype]
        try:
            if dtype is dtypes.float16:
                out = _half_arange(start, step, _arange_length(start, stop, step))
            elif dt in (_F32, _F64):  # (NumPy's arange steps by a rounded difference)
                out = _float_arange(start, step, _arange_length(start, stop, step), dt)
            elif dt.kind == "f":
                out = np.arange(start, stop, step, dtype=np.float64).astype(dt, copy=False)
            else:
                out = np.arange(start, stop, step, dtype=dt)
        except (MemoryError, ValueError) as error:
            shape = (_arange_length(start, stop, step),)
            raise allocation_error("arange", self.device.name, shape, dt, error) from None
        if out.size or not _arange_length(start, stop, step):
            return out
        # NumPy returns an empty array where the length overflows int64 (0 to 2**63 - 1)
        shape = (_arange_length(start, stop, step),)
        raise allocation_error("arange", self.device.name, shape, dt)

    def seed(self, value: int) -> None:
        self._rng = np.random.Generator(np.random.PCG64(value))

    def random_uniform(self, shape: Shape, low: float, high: float, dtype: DType) -> A:
        dt = _NP[dtype]
        try:
            u = self._rng.random(shape, dtype=_draw_dtype(dt))
            r = (u * (high - low) + low).astype(dt, copy=False)
        except (MemoryError, ValueError) as error:
            raise allocation_error("random_uniform", self.device.name, shape, dt, error) from None
        # Rounding can land on `high`; the interval is half-open.
        return np.minimum(r, np.nextafter(dt.type(high), dt.type(low)))

    def random_normal(self, shape: Shape, mean: float, std: float, dtype: DType) -> A:
        dt = _NP[dtype]
        try:
            z = self._rng.standard_normal(shape, dtype=_draw_dtype(dt))
            return (z * std + mean).astype(dt, copy=False)
        except (MemoryError, ValueError) as error:
            raise allocation_error("random_normal", self.device.name, shape, dt, error) from None

    def random_integers(self, shape: Shape, low: int, high: int, dtype: DType) -> A:
        try:
            return self._rng.integers(low, high, size=shape, dtype=_NP[dtype])
        except (MemoryError, ValueError) as error:
            raise allocation_error(
                "random_integers", self.device.name, shape, _NP[dtype], error
            ) from None

    def get_rng_state(self) -> bytes:
        pcg = self._rng.bit_generator.state
        values = (pcg["state"]["state"], pcg["state"]["inc"], pcg["has_uint32"], pcg["uinteger"])
        return b"".join(v.to_bytes(size, "little") for v, size in zip(values, _PCG64_SIZES))

    def set_rng_state(self, state: bytes) -> None:
        if len(state) != _PCG64_BYTES:
            raise ValueError(
                f"set_rng_state: a NumPy PCG64 state has {_PCG64_BYTES} bytes, got {len(state)}"
            )
        values, start = [], 0
        for size in _PCG64_SIZES:
            values.append(int.from_bytes(state[start : start + size], "little"))
            start += size
        bits = np.random.PCG64()
        bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": values[0], "inc": values[1]},
            "has_uint32": values[2],
            "uinteger": values[3],
        }
        self._rng = np.random.Generator(bits)

    @quiet
    def cast(self, a: A, dtype: DType) -> A:
        if a.dtype.kind == "c" and dtype.kind != "c":
            a = a.real  # what astype keeps, without NumPy's ComplexWarning
        dt = _NP[dtype]
        if (
            a.ndim > 1
            and a.dtype != dt
            and (1 in a.shape or 0 in a.strides or 0 in a.shape)
            and (a.base is not None or not a.flags.c_contiguous)
        ):  # (astype's K order is torch's layout but for size-1 and stride-0 axes and empty
            # arrays: a C-ordered array's size-1 axis may keep another stride only in a view)
            return cast_layout(a, dt)
        return a.astype(dt, copy=False)

    # unary --------------------------------------------------------------------------------

    neg = unary_ufunc(np.negative, quiet=False)
    abs = unary_ufunc(np.absolute, quiet=False)

    def sign(self, a: A) -> A:
        # A copy, never a itself: a may be memory shared with the host (see host.py).
        made = a.copy(order="K") if a.dtype == np.bool_ else np.sign(a)
        if a.ndim > 1 and not a.flags.c_contiguous:
            return unary_layout(made, a)
        return made

    exp = unary_ufunc(np.exp)
    log = unary_ufunc(np.log)
    sin = unary_ufunc(np.sin)
    cos = unary_ufunc(np.cos)
    sqrt = unary_ufunc(np.sqrt)
    tanh = unary_ufunc(np.tanh, quiet=False)

    @quiet
    def erf(self, a: A) -> A:
        return _erf.erf(np.asarray(a, dtype=np.float64)).astype(a.dtype, copy=False)

    floor = unary_ufunc(np.floor, quiet=False)
    ceil = unary_ufunc(np.ceil, quiet=False)
    round = unary_ufunc(np.rint, quiet=False)
    trunc = unary_ufunc(np.trunc, quiet=False)
    logical_not = unary_ufunc(np.logical_not, quiet=False)
    bitwise_not = unary_ufunc(np.invert, quiet=False)

    # binary -------------------------------------------------------------------------------

    add = binary_ufunc(np.add)
    sub = binary_ufunc(np.subtract)
    mul = binary_ufunc(np.multiply)
    div = binary_ufunc(np.true_divide)
    floordiv = binary_ufunc(np.floor_divide)  # NumPy floors like Python's //

    @quiet
    def remainder(self, a: A, b: A) -> A:
        # NumPy's remainder takes the divisor's sign like Python's %, a zero one too; torch's
        # zero keeps C fmod's sign, the dividend's (remainder(-2.0, 1.0) is -0.0 there,
        # remainder(2.0, -1.0) 0.0). count_nonzero is the cheap test (~0.2 us; ndarray.any
        # costs ~2 us); the repair runs only where a remainder is zero.
        rest = np.remainder(a, b)
        if rest.dtype.kind == "f" and np.count_nonzero(rest) != rest.size:
            rest = np.where(rest, rest, np.copysign(rest, a))  # (a NaN is true)
        return rest

    def pow(self, a: A, b: A) -> A:
        """NumPy's power laid out as torch's (ValueError for negative integer exponents: the
        IR is silent; float32 in double, :func:`_power_in_double`), but C's cpow,
        exp(b * log(a)), for complex operands, as torch's pow of complex tensors (NumPy
        multiplies integer exponents out, and its 0 ** 0 is 1, not NaN). Warnings off in
        :data:`_power` and here, not by :func:`quiet`: a Python frame fewer, the cost of a
        small op."""
        if a.dtype.kind != "c":
            if a.dtype == _F32:
                return _float32_power(self, a, b)
            return _power(self, a, b)
        token = ignore_errors()
        try:
            return np.exp(b * np.log(a))
        finally:
            restore_errors(token)

    # (clamp's bounds come here as 0-d arrays too: bounds=True)
    maximum = binary_ufunc(np.maximum, quiet=False, bounds=True)
    minimum = binary_ufunc(np.minimum, quiet=False, bounds=True)
    eq = binary_ufunc(np.equal, quiet=False)
    ne = binary_ufunc(np.not_equal, quiet=False)
    lt = binary_ufunc(np.less, quiet=False)
    le = binary_ufunc(np.less_equal, quiet=False)
    gt = binary_ufunc(np.greater, quiet=False)
    ge = binary_ufunc(np.greater_equal, quiet=False)
    logical_and = binary_ufunc(np.logical_and, quiet=False)
    logical_or = binary_ufunc(np.logical_or, quiet=False)
    logical_xor = binary_ufunc(np.logical_xor, quiet=False)
    bitwise_and = binary_ufunc(np.bitwise_and, quiet=False)
    bitwise_or = binary_ufunc(np.bitwise_or, quiet=False)
    bitwise_xor = binary_ufunc(np.bitwise_xor, quiet=False)

    # ternary ------------------------------------------------------------------------------

    def where(self, cond: A, a: A, b: A) -> A:
        word = _WORDS.get(a.dtype.itemsize)  # none for complex128
        if cond.size < _BITWISE_WHERE_MIN or word is None:
            out = np.where(cond, a, b)
        elif not np.shape(b) and not np.asarray(b).view(word):
            # np.where branches per element: on an unpredictable mask it runs ~5x slower than
            # a plain ufunc. Selecting bit patterns through a mask of all-zeros / all-ones
            # words has no branch and copies NaN, inf and -0.0 exactly. where(cond, a, 0)
            # (every ReLU-like gradient): one product of a's bits and cond.
            out = np.multiply(a.view(word), cond, dtype=word).view(a.dtype)
        else:
            mask = np.negative(cond.astype(word))
            bits = np.bitwise_and(a.view(word), mask)
            np.bitwise_or(bits, np.bitwise_and(np.asarray(b).view(word), np.invert(mask)), out=bits)
            out = bits.view(a.dtype)
        # (torch's loop over the three: order="K" sets a size-1 axis's stride apart, and
        # falls back to C order where the operands' layouts differ)
        if out.ndim > 1 and not (  # (C-ordered operands, no view's size-1 axis: told cheaply)
            cond.flags.c_contiguous
            and a.flags.c_contiguous
            and b.flags.c_contiguous
            and (1 not in out.shape or (cond.base is None and a.base is None and b.base is None))
        ):
            return iterator_layout(out, (cond, a, b))
        return out

    # reduce -------------------------------------------------------------------------------

    def sum(self, a: A, axes: Axes, keepdims: bool) -> A:
        return _reduced(_sum(a, axes, keepdims), a, keepdims)

    @quiet
    def prod(self, a: A, axes: Axes, keepdims: bool) -> A:
        if a.dtype == _F16:
            out = np.multiply.reduce(a, axis=axes, dtype=_F32, keepdims=keepdims).astype(_F16)
            return _reduced(out, a, keepdims)
        out = np.multiply.reduce(a, axis=axes, dtype=a.dtype, keepdims=keepdims)
        return _reduced(out, a, keepdims)

    def max(self, a: A, axes: Axes, keepdims: bool) -> A:
        return _reduced(np.maximum.reduce(a, axis=axes, keepdims=keepdims), a, keepdims)

    def min(self, a: A, axes: Axes, keepdims: bool) -> A:
        return _reduced(np.minimum.reduce(a, axis=axes, keepdims=keepdims), a, keepdims)

    def aminmax(self, a: A) -> A:
        # NumPy has no one-pass form; two reductions are still one call for the core (the
        # ufuncs' own reduce: np.min's wrapper costs more than the reduction of a few indices).
        return np.array((np.minimum.reduce(a, None), np.maximum.reduce(a, None)), dtype=a.dtype)

    def any(self, a: A, axes: Axes, keepdims: bool) -> A:
        return _reduced(np.logical_or.reduce(a, axis=axes, keepdims=keepdims), a, keepdims)

    def all(self, a: A, axes: Axes, keepdims: bool) -> A:
        return _reduced(np.logical_and.reduce(a, axis=axes, keepdims=keepdims), a, keepdims)

    def argmax(self, a: A, axis: int, keepdims: bool) -> A:
        # NumPy returns intp (int32 on 32-bit platforms); NaN counts as the maximum.
        out = a.argmax(axis=axis, keepdims=keepdims).astype(np.int64, copy=False)
        return _reduced(out, a, keepdims)

    def argmin(self, a: A, axis: int, keepdims: bool) -> A:
        out = a.argmin(axis=axis, keepdims=keepdims).astype(np.int64, copy=False)
        return _reduced(out, a, keepdims)

    def argsort(self, a: A, axis: int) -> A:
        order = _torch_order(a)
        if order is None:
            return np.argsort(a, axis, kind="stable").astype(np.int64, copy=False)
        # (sorted along a's axes seen in torch's order: a result row-major in that order)
        moved = np.argsort(a.transpose(order), order.index(axis % a.ndim), kind="stable")
        return _seen_back(moved.astype(np.int64, copy=False), order)

    @quiet
    def cumsum(self, a: A, axis: int) -> A:
        # (C order, as torch's: NumPy's accumulation keeps a transposed a's order)
        # PyTorch's CPU scan adds halves in float32, float32 in double, each sum rounded once
        if a.dtype == _F16:
            return _row_major(np.add.accumulate(a, axis=axis, dtype=_F32).astype(_F16))
        if a.dtype == _F32:
            return _row_major(np.add.accumulate(a, axis=axis, dtype=_F64).astype(_F32))
        return _row_major(np.add.accumulate(a, axis=axis, dtype=a.dtype))

    # movement -----------------------------------------------------------------------------

    def reshape(self, a: A, shape: Shape) -> A:
        return a.reshape(shape)

    def permute(self, a: A, perm: Axes) -> A:
        return a.transpose(perm)

    def expand(self, a: A, shape: Shape) -> A:
        shape = tuple(shape)
        if a.shape == shape:
            return a
        contiguous = a.flags.c_contiguous
        if not contiguous and 1 not in shape:
            return np.broadcast_to(a, shape)
        # Stride 0 only where the size changes: np.broadcast_to also zeroes the stride of a
        # size-1 axis that stays size 1, which torch keeps (its loop order reads it).
        strides = tuple(0 if n != m else s for n, m, s in zip(shape, a.shape, a.strides))
        if contiguous:  # (a view over a's own buffer: half the cost of np.broadcast_to)
            return np.ndarray(shape, a.dtype, a, 0, strides)
        return as_strided(a, shape, strides, writeable=False)

    def pad(self, a: A, widths: Sequence[tuple[int, int]], value: object) -> A:
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, widths))
        try:
            out = np.full(shape, value, dtype=a.dtype)
        except (MemoryError, ValueError) as error:  # eye's one array is a pad
            raise allocation_error("pad", self.device.name, shape, a.dtype, error) from None
        out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, widths))] = a
        return out

    def slice(self, a: A, starts: Shape, stops: Shape, steps: Shape) -> A:
        return a[tuple(map(slice, starts, stops, steps))]

    def select(self, a: A, axis: int, index: int) -> A:
        # (Ellipsis last: a 0-d array, not a NumPy scalar, where a is 1-d)
        return a[index, ...] if not axis else a[(slice(None),) * axis + (index, ...)]

    def split(self, a: A, axis: int, sizes: Shape) -> list[A]:
        lead = (slice(None),) * axis
        pieces, start = [], 0
        for n in sizes:
            pieces.append(a[(*lead, slice(start, start + n))])
            start += n
        return pieces

    def flip(self, a: A, axes: Axes) -> A:
        # A copy, as torch.flip: a view would see later writes into a host-shared a.
        order = _torch_order(a)
        if order is None:
            return np.flip(a, axes).copy()
        return _seen_back(np.flip(a, axes).transpose(order).copy(), order)

    def cat(self, arrays: Sequence[A], axis: int) -> A:
        out = np.concatenate(arrays, axis=axis)
        # torch's layout: channels_last where every input is (NumPy's mostly keeps it), else
        # contiguous (a first C-ordered input is not: no call for the common case)
        if out.ndim > 3 and not arrays[0].flags.c_contiguous and all(map(channels_last, arrays)):
            return out if channels_last(out) else _concatenate_channels_last(arrays, axis)
        return _row_major(out)

    # index --------------------------------------------------------------------------------

    def gather(self, a: A, axis: int, index: A) -> A:
        # (C order, as torch's kernel allocates it: fancy indexing follows the index's layout;
        # not ascontiguousarray, which makes a 0-d result 1-d)
        out = a[_along_axis(index, axis)]
        return out if out.flags.c_contiguous else out.copy()

    def take(self, a: A, axis: int, index: A) -> A:
        return np.take(a, index, axis=axis)

    def scatter(self, a: A, axis: int, index: A, src: A) -> A:
        out = a.copy()
        out[_along_axis(index, axis)] = src
        return out

    @quiet
    def scatter_add(self, a: A, axis: int, index: A, src: A) -> A:
        out = a.copy()
        np.add.at(out, _along_axis(index, axis), src)  # unbuffered: duplicates accumulate
        return out

    def scatter_reduce(self, a: A, axis: int, index: A, src: A, reduce: str) -> A:
        out = a.copy()
        with np.errstate(all="ignore"):  # IEEE results (an overflowing product), no warnings
            _SCATTER_UFUNCS[reduce].at(out, _along_axis(index, axis), src)
        return out

    def nonzero(self, a: A) -> A:
        return np.argwhere(a).astype(np.int64, copy=False)

    # linalg -------------------------------------------------------------------------------

    matmul = quiet_ufunc(np.matmul)  # (float16: float32 sums rounded once, as PyTorch)


def _arange_length(start: float, stop: float, step: float) -> int:
    """The number of values ``arange(start, stop, step)`` holds."""
    return max(0, math.ceil((stop - start) / step))


def _float_arange(start: float, step: float, n: int, dt: np.dtype) -> A:
    """PyTorch's float32 or float64 arange on CPU (its AVX2 loop), whose values depend on the
    element's place in its loop: each block of two vectors of 32 bytes (4 doubles, 8 floats),
    an element ``base + step * lane`` from its vector's ``base = start + step * first``, that
    base rounded to ``dt``; the last elements ``start + step * index``; all in double, each
    multiply-add fused, then rounded to ``dt``. (One loop, as :func:`_half_arange`.)"""
    if float(start).is_integer() and float(step).is_integer():
        # Whole numbers all exact in dt (2**24 floats, 2**53 doubles): every way of computing
        # them gives the same values, the cheapest is NumPy's
        if abs(start) + n * abs(step) <= (1 << (24 if dt == _F32 else 53)):
            return (np.arange(n, dtype=np.float64) * step + start).astype(dt, copy=False)
    lanes = 32 // dt.itemsize
    whole = n - n % (2 * lanes)
    firsts = np.arange(0, whole, lanes, dtype=np.float64)
    bases = _fused_multiply_add(firsts, step, start).astype(dt).astype(np.float64)
    vectors = _fused_multiply_add(np.arange(lanes, dtype=np.float64), step, bases[:, None])
    tail = _fused_multiply_add(np.arange(whole, n, dtype=np.float64), step, start)
    return np.concatenate([vectors.reshape(-1), tail]).astype(dt, copy=False)


def _fused_multiply_add(a: A, b: float, c: A | float) -> A:
    """``a * b + c`` in float64 rounded once, as a fused multiply-add (NumPy has none): the
    product's exact error by Dekker's splitting, the sum's by Knuth's two-sum, both added
    back (one more rounding of the tiny error terms: off only in near-tie cases)."""
    product = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(np.float64(b))
    product_error = ((a_hi * b_hi - product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo
    total = product + c
    part = total - product
    sum_error = (product - (total - part)) + (c - part)
    fused = total + (sum_error + product_error)
    # Near the float64 range the splitting overflows: the plain result there
    return np.where(np.isfinite(fused), fused, total)


def _split(x: A) -> tuple[A, A]:
    """``x`` as the sum of two halves of 26 significant bits, whose products are exact."""
    scaled = 134217729.0 * x  # 2**27 + 1
    high = scaled - (scaled - x)
    return high, x - high


def _half_arange(start: float, step: float, n: int) -> A:
    """PyTorch's float16 arange on CPU, whose values depend on the element's place in its
    loop: start and step in float32; each block of 32 elements as two vectors of 16, an
    element ``half(start + step * first) + step * lane`` (``first``, its vector's first
    index); the last n mod 32 elements ``start + step * index``; each multiply-add fused
    (rounded once to float32), then rounded to float16. (One loop: above 32,768 elements
    PyTorch splits it among its threads, each its own loop.)"""
    s, st = float(np.float32(start)), float(np.float32(step))
    whole = n - n % 32
    firsts = s + st * np.arange(0, whole, 16, dtype=np.float64)
    bases = firsts.astype(np.float32).astype(np.float16).astype(np.float64)
    vectors = bases[:, None] + st * np.arange(16, dtype=np.float64)
    tail = s + st * np.arange(whole, n, dtype=np.float64)
    return np.concatenate([vectors.reshape(-1), tail]).astype(np.float32).astype(np.float16)
