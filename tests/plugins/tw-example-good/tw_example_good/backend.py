"""Every primitive of ``tensorweaver.contract.ir`` on an array type of this plugin's own.

``RefArray`` wraps a NumPy array, so the arithmetic is NumPy's, but the core only ever sees
``RefArray`` objects: anything in the core that reached past the contract into NumPy would
break here. ``_lift`` turns a NumPy function into a primitive; the rest are written out
where the IR asks for more than NumPy's default (dtype kept, index grids, copies).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Callable

import numpy as np
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.records import DeviceRecord

NATIVE = {dt: np.dtype(dt.numpy_name) for dt in d.ALL if dt is not d.bfloat16}
_erf = np.frompyfunc(math.erf, 1, 1)


class RefArray:
    """This backend's array: a NumPy array the core cannot mistake for one."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    def __repr__(self) -> str:
        return f"RefArray({self.data!r})"


def _wrap(result) -> RefArray:
    # NumPy returns scalars for 0-d results; the IR wants arrays.
    return RefArray(np.asarray(result))


def _lift(fn: Callable) -> Callable:
    """A primitive whose operands are all arrays: unwrap, apply ``fn`` quietly (IEEE), wrap."""

    def primitive(self, *arrays: RefArray) -> RefArray:
        with np.errstate(all="ignore"):
            return _wrap(fn(*(a.data for a in arrays)))

    return primitive


def _keep_dtype(fn: Callable) -> Callable:
    """``fn`` with its result cast back to the first operand's dtype."""
    return lambda *arrays: fn(*arrays).astype(arrays[0].dtype, copy=False)


def _index_grid(index: np.ndarray, axis: int) -> tuple:
    # Full coordinates for scatter: ``index`` along ``axis``, its own position elsewhere.
    grid = list(np.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


class Backend:
    def __init__(self, device: DeviceRecord) -> None:
        self.device = device
        self.dtypes = frozenset(NATIVE)
        self._rng = np.random.default_rng()

    # data
    def from_host(self, array: np.ndarray, dtype: d.DType) -> RefArray:
        with np.errstate(all="ignore"):
            return RefArray(np.array(array, dtype=NATIVE[dtype], copy=True))

    def to_host(self, a: RefArray) -> np.ndarray:
        return a.data.copy()

    def full(self, shape: tuple[int, ...], value, dtype: d.DType) -> RefArray:
        return RefArray(np.full(shape, value, dtype=NATIVE[dtype]))

    def arange(self, start, stop, step, dtype: d.DType) -> RefArray:
        return RefArray(np.arange(start, stop, step, dtype=NATIVE[dtype]))

    def seed(self, value: int) -> None:
        self._rng = np.random.default_rng(value)

    def random_uniform(self, shape, low, high, dtype: d.DType) -> RefArray:
        return RefArray(self._rng.uniform(low, high, shape).astype(NATIVE[dtype]))

    def random_normal(self, shape, mean, std, dtype: d.DType) -> RefArray:
        return RefArray(self._rng.normal(mean, std, shape).astype(NATIVE[dtype]))

    def random_integers(self, shape, low, high, dtype: d.DType) -> RefArray:
        return RefArray(self._rng.integers(low, high, shape, dtype=NATIVE[dtype]))

    def cast(self, a: RefArray, dtype: d.DType) -> RefArray:
        with np.errstate(all="ignore"):
            return RefArray(a.data.astype(NATIVE[dtype]))

    # unary
    neg = _lift(np.negative)
    abs = _lift(np.abs)
    exp = _lift(np.exp)
    log = _lift(np.log)
    sin = _lift(np.sin)
    cos = _lift(np.cos)
    tanh = _lift(np.tanh)
    sqrt = _lift(np.sqrt)
    erf = _lift(_keep_dtype(_erf))
    floor = _lift(np.floor)
    ceil = _lift(np.ceil)
    round = _lift(np.round)
    trunc = _lift(np.trunc)
    logical_not = _lift(np.logical_not)
    bitwise_not = _lift(np.invert)

    def sign(self, a: RefArray) -> RefArray:
        # NumPy has no sign for bool; for bool the sign is the value itself.
        return RefArray(a.data.copy() if a.data.dtype == np.bool_ else np.sign(a.data))

    # binary
    add = _lift(np.add)
    sub = _lift(np.subtract)
    mul = _lift(np.multiply)
    div = _lift(np.true_divide)
    floordiv = _lift(np.floor_divide)
    remainder = _lift(np.remainder)
    pow = _lift(_keep_dtype(np.power))
    maximum = _lift(np.maximum)
    minimum = _lift(np.minimum)
    eq = _lift(np.equal)
    ne = _lift(np.not_equal)
    lt = _lift(np.less)
    le = _lift(np.less_equal)
    gt = _lift(np.greater)
    ge = _lift(np.greater_equal)
    logical_and = _lift(np.logical_and)
    logical_or = _lift(np.logical_or)
    logical_xor = _lift(np.logical_xor)
    bitwise_and = _lift(np.bitwise_and)
    bitwise_or = _lift(np.bitwise_or)
    bitwise_xor = _lift(np.bitwise_xor)

    # ternary
    where = _lift(lambda cond, a, b: np.where(cond, a, b).astype(a.dtype, copy=False))

    # reduce
    def sum(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.sum(a.data, axis=axes, keepdims=keepdims, dtype=a.data.dtype))

    def prod(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.prod(a.data, axis=axes, keepdims=keepdims, dtype=a.data.dtype))

    def max(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.max(a.data, axis=axes, keepdims=keepdims))

    def min(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.min(a.data, axis=axes, keepdims=keepdims))

    def any(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.any(a.data, axis=axes, keepdims=keepdims))

    def all(self, a: RefArray, axes: tuple[int, ...], keepdims: bool) -> RefArray:
        return _wrap(np.all(a.data, axis=axes, keepdims=keepdims))

    def argmax(self, a: RefArray, axis: int, keepdims: bool) -> RefArray:
        return _wrap(np.argmax(a.data, axis=axis, keepdims=keepdims).astype(np.int64))

    def argmin(self, a: RefArray, axis: int, keepdims: bool) -> RefArray:
        return _wrap(np.argmin(a.data, axis=axis, keepdims=keepdims).astype(np.int64))

    def cumsum(self, a: RefArray, axis: int) -> RefArray:
        return RefArray(np.cumsum(a.data, axis=axis, dtype=a.data.dtype))

    # movement
    def reshape(self, a: RefArray, shape: tuple[int, ...]) -> RefArray:
        return RefArray(a.data.reshape(shape))

    def permute(self, a: RefArray, perm: tuple[int, ...]) -> RefArray:
        return RefArray(a.data.transpose(perm))

    def expand(self, a: RefArray, shape: tuple[int, ...]) -> RefArray:
        return RefArray(np.broadcast_to(a.data, shape))

    def pad(self, a: RefArray, widths: tuple[tuple[int, int], ...], value) -> RefArray:
        return RefArray(np.pad(a.data, widths, constant_values=value))

    def slice(self, a: RefArray, starts, stops, steps) -> RefArray:
        return RefArray(a.data[tuple(map(slice, starts, stops, steps))])

    def flip(self, a: RefArray, axes: tuple[int, ...]) -> RefArray:
        return RefArray(np.flip(a.data, axes))

    def cat(self, arrays: Sequence[RefArray], axis: int) -> RefArray:
        return RefArray(np.concatenate([a.data for a in arrays], axis=axis))

    # index
    def gather(self, a: RefArray, axis: int, index: RefArray) -> RefArray:
        return RefArray(np.take_along_axis(a.data, index.data, axis=axis))

    def take(self, a: RefArray, axis: int, index: RefArray) -> RefArray:
        return RefArray(np.take(a.data, index.data, axis=axis))

    def scatter(self, a: RefArray, axis: int, index: RefArray, src: RefArray) -> RefArray:
        out = a.data.copy()
        out[_index_grid(index.data, axis)] = src.data
        return RefArray(out)

    def scatter_add(self, a: RefArray, axis: int, index: RefArray, src: RefArray) -> RefArray:
        out = a.data.copy()
        np.add.at(out, _index_grid(index.data, axis), src.data)  # duplicates accumulate
        return RefArray(out)

    def nonzero(self, a: RefArray) -> RefArray:
        return RefArray(np.argwhere(a.data).astype(np.int64))

    # linalg
    matmul = _lift(np.matmul)
