"""Every primitive of ``tensorweaver.contract.ir`` on NumPy arrays.

The core guarantees the preconditions listed in the IR module (one dtype, equal or
0-d shapes, normalised axes), so methods call NumPy directly. Results keep the input
dtype where the IR says so: NumPy 2 keeps it for same-dtype operands; reductions and
``sign`` on small types are pinned with ``dtype=`` or a cast.
"""

from __future__ import annotations

import math

import numpy as np
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.records import DeviceRecord

NATIVE = {dt: np.dtype(dt.numpy_name) for dt in d.ALL if dt is not d.bfloat16}
_erf = np.frompyfunc(math.erf, 1, 1)


def _quiet(fn):
    """Run an op that can overflow or divide by zero without NumPy warnings (IEEE results)."""

    def run(*args):
        with np.errstate(all="ignore"):
            return fn(*args)

    run.__name__ = fn.__name__
    return run


class NumpyBackend:
    def __init__(self, device: DeviceRecord) -> None:
        self.device = device
        self.dtypes = frozenset(NATIVE)
        self._rng = np.random.default_rng()

    # data
    def from_host(self, array, dtype):
        return np.array(array, dtype=NATIVE[dtype], copy=True)

    def to_host(self, a):
        return np.asarray(a)

    def full(self, shape, value, dtype):
        return np.full(shape, value, dtype=NATIVE[dtype])

    def arange(self, start, stop, step, dtype):
        return np.arange(start, stop, step, dtype=NATIVE[dtype])

    def seed(self, value):
        self._rng = np.random.default_rng(value)

    def random_uniform(self, shape, low, high, dtype):
        return self._rng.uniform(low, high, shape).astype(NATIVE[dtype], copy=False)

    def random_normal(self, shape, mean, std, dtype):
        return self._rng.normal(mean, std, shape).astype(NATIVE[dtype], copy=False)

    def random_integers(self, shape, low, high, dtype):
        return self._rng.integers(low, high, shape, dtype=NATIVE[dtype])

    @_quiet
    def cast(self, a, dtype):
        return a.astype(NATIVE[dtype])

    # unary
    neg = staticmethod(np.negative)
    abs = staticmethod(np.abs)
    exp = staticmethod(_quiet(np.exp))
    log = staticmethod(_quiet(np.log))
    sin = staticmethod(np.sin)
    cos = staticmethod(np.cos)
    tanh = staticmethod(np.tanh)
    sqrt = staticmethod(_quiet(np.sqrt))
    floor = staticmethod(np.floor)
    ceil = staticmethod(np.ceil)
    round = staticmethod(np.round)
    trunc = staticmethod(np.trunc)
    logical_not = staticmethod(np.logical_not)
    bitwise_not = staticmethod(np.invert)

    def sign(self, a):
        if a.dtype == np.bool_:
            return a.copy()
        return np.sign(a)

    def erf(self, a):
        return _erf(a).astype(a.dtype)

    # binary
    add = staticmethod(_quiet(np.add))
    sub = staticmethod(_quiet(np.subtract))
    mul = staticmethod(_quiet(np.multiply))
    div = staticmethod(_quiet(np.true_divide))
    floordiv = staticmethod(_quiet(np.floor_divide))
    remainder = staticmethod(_quiet(np.remainder))
    maximum = staticmethod(np.maximum)
    minimum = staticmethod(np.minimum)
    eq = staticmethod(np.equal)
    ne = staticmethod(np.not_equal)
    lt = staticmethod(np.less)
    le = staticmethod(np.less_equal)
    gt = staticmethod(np.greater)
    ge = staticmethod(np.greater_equal)
    logical_and = staticmethod(np.logical_and)
    logical_or = staticmethod(np.logical_or)
    logical_xor = staticmethod(np.logical_xor)
    bitwise_and = staticmethod(np.bitwise_and)
    bitwise_or = staticmethod(np.bitwise_or)
    bitwise_xor = staticmethod(np.bitwise_xor)

    @_quiet
    def pow(self, a, b):
        return np.power(a, b).astype(a.dtype, copy=False)

    def where(self, cond, a, b):
        return np.where(cond, a, b).astype(np.result_type(a, b), copy=False)

    # reduce
    def sum(self, a, axes, keepdims):
        return np.sum(a, axis=axes, keepdims=keepdims, dtype=a.dtype)

    def prod(self, a, axes, keepdims):
        return np.prod(a, axis=axes, keepdims=keepdims, dtype=a.dtype)

    def max(self, a, axes, keepdims):
        return np.max(a, axis=axes, keepdims=keepdims)

    def min(self, a, axes, keepdims):
        return np.min(a, axis=axes, keepdims=keepdims)

    def any(self, a, axes, keepdims):
        return np.any(a, axis=axes, keepdims=keepdims)

    def all(self, a, axes, keepdims):
        return np.all(a, axis=axes, keepdims=keepdims)

    def argmax(self, a, axis, keepdims):
        return np.argmax(a, axis=axis, keepdims=keepdims).astype(np.int64, copy=False)

    def argmin(self, a, axis, keepdims):
        return np.argmin(a, axis=axis, keepdims=keepdims).astype(np.int64, copy=False)

    def cumsum(self, a, axis):
        return np.cumsum(a, axis=axis, dtype=a.dtype)

    # movement
    def reshape(self, a, shape):
        return np.reshape(a, shape)

    def permute(self, a, perm):
        return np.transpose(a, perm)

    def expand(self, a, shape):
        return np.broadcast_to(a, shape)

    def pad(self, a, widths, value):
        return np.pad(a, widths, constant_values=value)

    def slice(self, a, starts, stops, steps):
        return a[tuple(map(slice, starts, stops, steps))]

    def flip(self, a, axes):
        return np.flip(a, axes)

    def cat(self, arrays, axis):
        return np.concatenate(arrays, axis=axis)

    # index
    def gather(self, a, axis, index):
        return np.take_along_axis(a, index, axis=axis)

    def take(self, a, axis, index):
        return np.take(a, index, axis=axis)

    def scatter(self, a, axis, index, src):
        out = a.copy()
        np.put_along_axis(out, index, src, axis=axis)
        return out

    def scatter_add(self, a, axis, index, src):
        out = a.copy()
        grid = list(np.indices(index.shape, sparse=True))
        grid[axis] = index
        np.add.at(out, tuple(grid), src)
        return out

    def nonzero(self, a):
        return np.argwhere(a).astype(np.int64, copy=False)

    # linalg
    matmul = staticmethod(np.matmul)
