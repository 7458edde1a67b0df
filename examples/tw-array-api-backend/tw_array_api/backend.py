"""The backend object: every primitive of ``tensorweaver.contract.ir`` on array-api-strict.

TensorWeaver builds every tensor op, gradient and layer from these methods, calling them
directly (no plugin machinery per op). Before a call the core has already done the hard
parts: elementwise operands share one dtype and one shape (or one is 0-d), axes are
non-negative and sorted, index arrays are int64 and in range. In return each method must:

* return exactly the dtype the IR says (usually its input's: pass ``dtype=`` to reductions,
  which the Array API would otherwise widen);
* never write into its inputs (returning a view or the input itself is fine);
* follow IEEE for floats: NaN and inf propagate, no warnings, no exceptions.

Most methods are one call of the Array API standard (``xp``), so this file ports to any
conforming library: swap ``xp`` for ``array_api_compat.array_namespace(...)`` of CuPy,
PyTorch or JAX. Where the standard has no function (pad, scatter, erf, random numbers), the
method builds it from ones it has; those are the places to use a library's own kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

import array_api_strict as xp
import numpy as np
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.contract.ir import REQUIRED
from tensorweaver.contract.records import DeviceRecord

from tw_array_api.erf import erf

A = Any  # the library's array type
Shape = Sequence[int]

#: TensorWeaver dtype -> the library's. No float16 or bfloat16 here: the core then refuses
#: them on this device with a clear error, and the conformance kit skips those cases.
NATIVE = {
    d.bool_: xp.bool,
    d.uint8: xp.uint8,
    d.int8: xp.int8,
    d.int16: xp.int16,
    d.int32: xp.int32,
    d.int64: xp.int64,
    d.float32: xp.float32,
    d.float64: xp.float64,
}


def quiet(cls: type) -> type:
    """Run every primitive of ``cls`` without floating-point warnings.

    array-api-strict computes with NumPy, which warns on 0/0 and log(0); the IR wants the
    IEEE result silently. (A library that does not warn needs none of this.)
    """

    def wrap(method: Callable) -> Callable:
        @functools.wraps(method)
        def primitive(*args: Any) -> Any:
            with np.errstate(all="ignore"):
                return method(*args)

        return primitive

    for name in REQUIRED:
        setattr(cls, name, wrap(getattr(cls, name)))
    return cls


@quiet
class ArrayAPIBackend:
    def __init__(self, device: DeviceRecord) -> None:
        self.device = device  # the record this object serves (the core reads .name from it)
        self.dtypes = frozenset(NATIVE)
        self._rng = np.random.default_rng()

    # -- data: the host side is NumPy, by contract ---------------------------------------

    def from_host(self, array: np.ndarray, dtype: DType) -> A:
        # NumPy converts (and copies); the library then takes the array through DLPack.
        host = np.array(array, dtype=np.dtype(dtype.numpy_name), copy=True)
        return xp.asarray(host, dtype=NATIVE[dtype])

    def to_host(self, a: A) -> np.ndarray:
        return np.from_dlpack(a).copy()  # a copy: the caller may write into it

    def full(self, shape: Shape, value: Any, dtype: DType) -> A:
        return xp.full(tuple(shape), value, dtype=NATIVE[dtype])

    def arange(self, start: Any, stop: Any, step: Any, dtype: DType) -> A:
        return xp.arange(start, stop, step, dtype=NATIVE[dtype])

    # The standard has no random numbers: draw on the host with a seeded NumPy generator.
    def seed(self, value: int) -> None:
        self._rng = np.random.default_rng(value)

    def random_uniform(self, shape: Shape, low: float, high: float, dtype: DType) -> A:
        return self.from_host(self._rng.uniform(low, high, tuple(shape)), dtype)

    def random_normal(self, shape: Shape, mean: float, std: float, dtype: DType) -> A:
        return self.from_host(self._rng.normal(mean, std, tuple(shape)), dtype)

    def random_integers(self, shape: Shape, low: int, high: int, dtype: DType) -> A:
        return self.from_host(self._rng.integers(low, high, tuple(shape)), dtype)

    def cast(self, a: A, dtype: DType) -> A:
        return xp.astype(a, NATIVE[dtype])

    # -- elementwise ---------------------------------------------------------------------

    def neg(self, a: A) -> A:
        return xp.negative(a)

    def abs(self, a: A) -> A:
        return xp.abs(a)

    def sign(self, a: A) -> A:
        return a if a.dtype == xp.bool else xp.sign(a)  # the standard's sign takes no bool

    def exp(self, a: A) -> A:
        return xp.exp(a)

    def log(self, a: A) -> A:
        return xp.log(a)

    def sin(self, a: A) -> A:
        return xp.sin(a)

    def cos(self, a: A) -> A:
        return xp.cos(a)

    def tanh(self, a: A) -> A:
        return xp.tanh(a)

    def sqrt(self, a: A) -> A:
        return xp.sqrt(a)

    def erf(self, a: A) -> A:
        return erf(xp, a)  # not in the standard: built from exp and arithmetic

    def floor(self, a: A) -> A:
        return xp.floor(a)

    def ceil(self, a: A) -> A:
        return xp.ceil(a)

    def round(self, a: A) -> A:
        return xp.round(a)  # half to even, as the IR asks

    def trunc(self, a: A) -> A:
        return xp.trunc(a)

    def logical_not(self, a: A) -> A:
        return xp.logical_not(a)

    def bitwise_not(self, a: A) -> A:
        return xp.bitwise_invert(a)

    def add(self, a: A, b: A) -> A:
        return xp.add(a, b)

    def sub(self, a: A, b: A) -> A:
        return xp.subtract(a, b)

    def mul(self, a: A, b: A) -> A:
        return xp.multiply(a, b)

    def div(self, a: A, b: A) -> A:
        return xp.divide(a, b)

    def floordiv(self, a: A, b: A) -> A:
        return xp.floor_divide(a, b)

    def remainder(self, a: A, b: A) -> A:
        return xp.remainder(a, b)

    def pow(self, a: A, b: A) -> A:
        return xp.pow(a, b)

    def maximum(self, a: A, b: A) -> A:
        return xp.maximum(a, b)

    def minimum(self, a: A, b: A) -> A:
        return xp.minimum(a, b)

    def eq(self, a: A, b: A) -> A:
        return xp.equal(a, b)

    def ne(self, a: A, b: A) -> A:
        return xp.not_equal(a, b)

    def lt(self, a: A, b: A) -> A:
        return xp.less(_numeric(a), _numeric(b))

    def le(self, a: A, b: A) -> A:
        return xp.less_equal(_numeric(a), _numeric(b))

    def gt(self, a: A, b: A) -> A:
        return xp.greater(_numeric(a), _numeric(b))

    def ge(self, a: A, b: A) -> A:
        return xp.greater_equal(_numeric(a), _numeric(b))

    def logical_and(self, a: A, b: A) -> A:
        return xp.logical_and(a, b)

    def logical_or(self, a: A, b: A) -> A:
        return xp.logical_or(a, b)

    def logical_xor(self, a: A, b: A) -> A:
        return xp.logical_xor(a, b)

    def bitwise_and(self, a: A, b: A) -> A:
        return xp.bitwise_and(a, b)

    def bitwise_or(self, a: A, b: A) -> A:
        return xp.bitwise_or(a, b)

    def bitwise_xor(self, a: A, b: A) -> A:
        return xp.bitwise_xor(a, b)

    def where(self, cond: A, a: A, b: A) -> A:
        return xp.where(cond, a, b)

    # -- reductions: dtype= keeps the input's dtype ----------------------------------------

    def sum(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.sum(a, axis=tuple(axes), keepdims=keepdims, dtype=a.dtype)

    def prod(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.prod(a, axis=tuple(axes), keepdims=keepdims, dtype=a.dtype)

    def max(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.max(a, axis=tuple(axes), keepdims=keepdims)

    def min(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.min(a, axis=tuple(axes), keepdims=keepdims)

    def any(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.any(a, axis=tuple(axes), keepdims=keepdims)

    def all(self, a: A, axes: Shape, keepdims: bool) -> A:
        return xp.all(a, axis=tuple(axes), keepdims=keepdims)

    def argmax(self, a: A, axis: int, keepdims: bool) -> A:
        return xp.argmax(_numeric(a), axis=axis, keepdims=keepdims)

    def argmin(self, a: A, axis: int, keepdims: bool) -> A:
        return xp.argmin(_numeric(a), axis=axis, keepdims=keepdims)

    def cumsum(self, a: A, axis: int) -> A:
        return xp.cumulative_sum(a, axis=axis, dtype=a.dtype)

    def argsort(self, a: A, axis: int) -> A:
        # Optional (ir.OPTIONAL): without it the core would sort on the host.
        return xp.argsort(_numeric(a), axis=axis, stable=True)

    # -- movement --------------------------------------------------------------------------

    def reshape(self, a: A, shape: Shape) -> A:
        return xp.reshape(a, tuple(shape))

    def permute(self, a: A, perm: Shape) -> A:
        return xp.permute_dims(a, tuple(perm))

    def expand(self, a: A, shape: Shape) -> A:
        return xp.broadcast_to(a, tuple(shape))

    def pad(self, a: A, widths: Sequence[tuple[int, int]], value: Any) -> A:
        # No pad in the standard: join blocks of `value` before and after, axis by axis.
        for axis, (before, after) in enumerate(widths):
            blocks = []
            for width in (before, after):
                shape = list(a.shape)
                shape[axis] = width
                blocks.append(xp.full(tuple(shape), value, dtype=a.dtype))
            a = xp.concat([blocks[0], a, blocks[1]], axis=axis)
        return a

    def slice(self, a: A, starts: Shape, stops: Shape, steps: Shape) -> A:
        return a[tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps))]

    def flip(self, a: A, axes: Shape) -> A:
        return xp.flip(a, axis=tuple(axes)) if axes else a

    def cat(self, arrays: Sequence[A], axis: int) -> A:
        return xp.concat(list(arrays), axis=axis)

    # -- indexing --------------------------------------------------------------------------

    def gather(self, a: A, axis: int, index: A) -> A:
        # The index may be shorter than `a` on every axis (PyTorch's gather); the standard's
        # take_along_axis wants equal sizes off `axis`, so `a` is cut to the index's first.
        cut = tuple(slice(None) if k == axis else slice(0, n) for k, n in enumerate(index.shape))
        return xp.take_along_axis(a[cut], index, axis=axis)

    def take(self, a: A, axis: int, index: A) -> A:
        return xp.take(a, index, axis=axis)

    def scatter(self, a: A, axis: int, index: A, src: A) -> A:
        # For each element of `a`, the last write aimed at it (if any) wins.
        hits, flat_src = _hits(a, axis, index, src)
        if hits.shape[0] == 0:
            return a
        order = xp.reshape(xp.arange(hits.shape[0], dtype=xp.int64), (-1, 1))
        writer = xp.max(xp.where(hits, order, -1), axis=0)  # the last k aiming at each element
        written = xp.take(flat_src, xp.clip(writer, 0, None), axis=0)
        return xp.reshape(xp.where(writer >= 0, written, xp.reshape(a, (-1,))), a.shape)

    def scatter_add(self, a: A, axis: int, index: A, src: A) -> A:
        # Sum every write aimed at each element: duplicates accumulate, NaN stays put.
        hits, flat_src = _hits(a, axis, index, src)
        zero = xp.zeros((), dtype=a.dtype)
        added = xp.sum(xp.where(hits, xp.reshape(flat_src, (-1, 1)), zero), axis=0, dtype=a.dtype)
        return xp.reshape(xp.reshape(a, (-1,)) + added, a.shape)

    def nonzero(self, a: A) -> A:
        if a.ndim == 0:  # the standard's nonzero wants at least one axis
            count = int(xp.sum(xp.astype(xp.astype(xp.reshape(a, (1,)), xp.bool), xp.int64)))
            return xp.zeros((count, 0), dtype=xp.int64)
        return xp.stack(xp.nonzero(a), axis=1)

    # -- linear algebra --------------------------------------------------------------------

    def matmul(self, a: A, b: A) -> A:
        return xp.matmul(a, b)


def _numeric(a: A) -> A:
    """``a``, with bool as uint8: the standard orders (<, argmax) numbers only."""
    return xp.astype(a, xp.uint8) if a.dtype == xp.bool else a


def _hits(a: A, axis: int, index: A, src: A) -> tuple[A, A]:
    """Which element of ``a`` each write aims at, as a (writes, a.size) boolean table.

    The standard has no scatter, so this compares flat positions with every element:
    memory grows with writes x elements. It keeps the example short and exact; a library
    with a scatter kernel (``index_add``, ``.at[].add``) should use that instead.
    """
    strides = [1] * a.ndim
    for k in range(a.ndim - 2, -1, -1):
        strides[k] = strides[k + 1] * a.shape[k + 1]
    position = xp.zeros(index.shape, dtype=xp.int64)
    for k in range(a.ndim):
        if k == axis:
            coordinate = index
        else:  # the write's own coordinate along k
            shape = [1] * a.ndim
            shape[k] = index.shape[k]
            coordinate = xp.reshape(xp.arange(index.shape[k], dtype=xp.int64), tuple(shape))
        position = position + coordinate * strides[k]
    size = 1
    for n in a.shape:
        size *= n
    flat = xp.reshape(position, (-1, 1))
    hits = flat == xp.reshape(xp.arange(size, dtype=xp.int64), (1, -1))
    return hits, xp.reshape(src, (-1,))
