"""The backend object: every primitive of ``tensorweaver.contract.ir`` on jax.numpy (CPU).

The core calls these methods directly, eagerly, one op at a time; each is one or two
jax.numpy calls. Before a call the core has broadcast and promoted the operands, normalised
the axes and checked every index, so no method checks anything. JAX arrays are immutable,
so no primitive can write into its inputs, and JAX never warns on 0/0 or log(0).

``tw_create_backend`` has switched ``jax_enable_x64`` on before this module is imported:
without it ``int64`` and ``float64`` arrays would silently be 32-bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.contract.records import DeviceRecord

A = Any  # jax.Array
Shape = Sequence[int]

#: TensorWeaver dtype -> JAX's: every one of them.
NATIVE = {
    d.bool_: jnp.bool_,
    d.uint8: jnp.uint8,
    d.int8: jnp.int8,
    d.int16: jnp.int16,
    d.int32: jnp.int32,
    d.int64: jnp.int64,
    d.float16: jnp.float16,
    d.bfloat16: jnp.bfloat16,
    d.float32: jnp.float32,
    d.float64: jnp.float64,
}


class JaxBackend:
    def __init__(self, device: DeviceRecord) -> None:
        self.device = device  # the record this object serves
        self.dtypes = frozenset(NATIVE)
        # Every array lives on the CPU, even where a JAX with GPUs would default to one.
        self._cpu = jax.devices("cpu")[0]
        self.seed(0)

    # -- data ------------------------------------------------------------------------------

    def from_host(self, array: np.ndarray, dtype: DType) -> A:
        # Our own copy first: on the CPU, JAX may keep using the host buffer it is handed.
        host = np.array(array, dtype=np.dtype(dtype.numpy_name), copy=True)
        return jax.device_put(host, self._cpu).astype(NATIVE[dtype])

    def to_host(self, a: A) -> np.ndarray:
        if a.dtype == jnp.bfloat16:  # NumPy has no bfloat16: it travels as float32
            a = a.astype(jnp.float32)
        return np.array(a, copy=True)  # the caller may write into it

    def full(self, shape: Shape, value: Any, dtype: DType) -> A:
        return jnp.full(tuple(shape), value, dtype=NATIVE[dtype], device=self._cpu)

    def arange(self, start: Any, stop: Any, step: Any, dtype: DType) -> A:
        return jnp.arange(start, stop, step, dtype=NATIVE[dtype], device=self._cpu)

    # JAX's random numbers are functional: keep a key, and split off a fresh one per draw.
    def seed(self, value: int) -> None:
        self._key = jax.device_put(jax.random.key(_int64(value)), self._cpu)

    def _next_key(self) -> A:
        self._key, key = jax.random.split(self._key)
        return key

    def random_uniform(self, shape: Shape, low: float, high: float, dtype: DType) -> A:
        return jax.random.uniform(
            self._next_key(), tuple(shape), NATIVE[dtype], minval=low, maxval=high
        )

    def random_normal(self, shape: Shape, mean: float, std: float, dtype: DType) -> A:
        sample = jax.random.normal(self._next_key(), tuple(shape), NATIVE[dtype])
        return sample * jnp.asarray(std, NATIVE[dtype]) + jnp.asarray(mean, NATIVE[dtype])

    def random_integers(self, shape: Shape, low: int, high: int, dtype: DType) -> A:
        return jax.random.randint(self._next_key(), tuple(shape), low, high, NATIVE[dtype])

    def cast(self, a: A, dtype: DType) -> A:
        return a.astype(NATIVE[dtype])

    # -- elementwise -----------------------------------------------------------------------

    def neg(self, a: A) -> A:
        return jnp.negative(a)

    def abs(self, a: A) -> A:
        return jnp.abs(a)

    def sign(self, a: A) -> A:
        return a if a.dtype == jnp.bool_ else jnp.sign(a)

    def exp(self, a: A) -> A:
        return jnp.exp(a)

    def log(self, a: A) -> A:
        return jnp.log(a)

    def sin(self, a: A) -> A:
        return jnp.sin(a)

    def cos(self, a: A) -> A:
        return jnp.cos(a)

    def tanh(self, a: A) -> A:
        return jnp.tanh(a)

    def sqrt(self, a: A) -> A:
        return jnp.sqrt(a)

    def erf(self, a: A) -> A:
        return special.erf(a)

    def floor(self, a: A) -> A:
        return jnp.floor(a)

    def ceil(self, a: A) -> A:
        return jnp.ceil(a)

    def round(self, a: A) -> A:
        return jnp.round(a)  # half to even, as the IR asks

    def trunc(self, a: A) -> A:
        return jnp.trunc(a)

    def logical_not(self, a: A) -> A:
        return jnp.logical_not(a)

    def bitwise_not(self, a: A) -> A:
        return jnp.bitwise_not(a)

    def add(self, a: A, b: A) -> A:
        return jnp.add(a, b)

    def sub(self, a: A, b: A) -> A:
        return jnp.subtract(a, b)

    def mul(self, a: A, b: A) -> A:
        return jnp.multiply(a, b)

    def div(self, a: A, b: A) -> A:
        return jnp.divide(a, b)

    def floordiv(self, a: A, b: A) -> A:
        return jnp.floor_divide(a, b)

    def remainder(self, a: A, b: A) -> A:
        return jnp.remainder(a, b)

    def pow(self, a: A, b: A) -> A:
        return jnp.power(a, b)

    def maximum(self, a: A, b: A) -> A:
        return jnp.maximum(a, b)

    def minimum(self, a: A, b: A) -> A:
        return jnp.minimum(a, b)

    def eq(self, a: A, b: A) -> A:
        return jnp.equal(a, b)

    def ne(self, a: A, b: A) -> A:
        return jnp.not_equal(a, b)

    def lt(self, a: A, b: A) -> A:
        return jnp.less(a, b)

    def le(self, a: A, b: A) -> A:
        return jnp.less_equal(a, b)

    def gt(self, a: A, b: A) -> A:
        return jnp.greater(a, b)

    def ge(self, a: A, b: A) -> A:
        return jnp.greater_equal(a, b)

    def logical_and(self, a: A, b: A) -> A:
        return jnp.logical_and(a, b)

    def logical_or(self, a: A, b: A) -> A:
        return jnp.logical_or(a, b)

    def logical_xor(self, a: A, b: A) -> A:
        return jnp.logical_xor(a, b)

    def bitwise_and(self, a: A, b: A) -> A:
        return jnp.bitwise_and(a, b)

    def bitwise_or(self, a: A, b: A) -> A:
        return jnp.bitwise_or(a, b)

    def bitwise_xor(self, a: A, b: A) -> A:
        return jnp.bitwise_xor(a, b)

    def where(self, cond: A, a: A, b: A) -> A:
        return jnp.where(cond, a, b)

    # -- reductions: dtype= keeps the input's dtype ----------------------------------------

    def sum(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.sum(a, axis=tuple(axes), keepdims=keepdims, dtype=a.dtype)

    def prod(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.prod(a, axis=tuple(axes), keepdims=keepdims, dtype=a.dtype)

    def max(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.max(a, axis=tuple(axes), keepdims=keepdims)

    def min(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.min(a, axis=tuple(axes), keepdims=keepdims)

    def any(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.any(a, axis=tuple(axes), keepdims=keepdims)

    def all(self, a: A, axes: Shape, keepdims: bool) -> A:
        return jnp.all(a, axis=tuple(axes), keepdims=keepdims)

    def argmax(self, a: A, axis: int, keepdims: bool) -> A:
        return jnp.argmax(a, axis=axis, keepdims=keepdims).astype(jnp.int64)

    def argmin(self, a: A, axis: int, keepdims: bool) -> A:
        return jnp.argmin(a, axis=axis, keepdims=keepdims).astype(jnp.int64)

    def cumsum(self, a: A, axis: int) -> A:
        return jnp.cumsum(a, axis=axis, dtype=a.dtype)

    def argsort(self, a: A, axis: int) -> A:
        # Optional (ir.OPTIONAL): without it the core sorts on the host. JAX sorts NaN last.
        return jnp.argsort(a, axis=axis, stable=True).astype(jnp.int64)

    # -- movement --------------------------------------------------------------------------

    def reshape(self, a: A, shape: Shape) -> A:
        return jnp.reshape(a, tuple(shape))

    def permute(self, a: A, perm: Shape) -> A:
        return jnp.transpose(a, tuple(perm))

    def expand(self, a: A, shape: Shape) -> A:
        return jnp.broadcast_to(a, tuple(shape))

    def pad(self, a: A, widths: Sequence[tuple[int, int]], value: Any) -> A:
        return jnp.pad(a, [tuple(w) for w in widths], constant_values=value)

    def slice(self, a: A, starts: Shape, stops: Shape, steps: Shape) -> A:
        return a[tuple(slice(b, e, s) for b, e, s in zip(starts, stops, steps))]

    def flip(self, a: A, axes: Shape) -> A:
        return jnp.flip(a, axis=tuple(axes)) if axes else a

    def cat(self, arrays: Sequence[A], axis: int) -> A:
        return jnp.concatenate(list(arrays), axis=axis)

    # -- indexing: every index is in range, so JAX is told not to clamp or fill -------------

    def gather(self, a: A, axis: int, index: A) -> A:
        # torch.gather's index may be shorter than `a` off `axis`; take_along_axis wants
        # equal sizes there, so `a` is cut to the index first.
        cut = tuple(slice(None) if k == axis else slice(0, n) for k, n in enumerate(index.shape))
        return jnp.take_along_axis(a[cut], index, axis=axis, mode="promise_in_bounds")

    def take(self, a: A, axis: int, index: A) -> A:
        return jnp.take(a, index, axis=axis, mode="clip")  # take has no "promise_in_bounds"

    def scatter(self, a: A, axis: int, index: A, src: A) -> A:
        return a.at[_coordinates(axis, index)].set(src, mode="promise_in_bounds")

    def scatter_add(self, a: A, axis: int, index: A, src: A) -> A:
        return a.at[_coordinates(axis, index)].add(src, mode="promise_in_bounds")

    def nonzero(self, a: A) -> A:
        # The result's length depends on the values: JAX reads the count back to the host.
        return jnp.argwhere(a).astype(jnp.int64)

    # -- linear algebra --------------------------------------------------------------------

    def matmul(self, a: A, b: A) -> A:
        return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


def _coordinates(axis: int, index: A) -> tuple[A, ...]:
    """The full coordinates torch.scatter writes ``index``'s elements to: ``index`` itself
    along ``axis``, the element's own position along every other axis."""
    return tuple(
        index if k == axis else jax.lax.broadcasted_iota(jnp.int64, index.shape, k)
        for k in range(index.ndim)
    )


def _int64(value: int) -> int:
    """A seed of any size as the int64 JAX keys take (torch seeds go up to 2**64 - 1)."""
    value %= 2**64
    return value - 2**64 if value >= 2**63 else value
