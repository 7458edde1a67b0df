"""The optional foreach primitives of the backend API 2.4 (see ``OPTIONAL`` in
``tensorweaver.contract.ir``): the same ufunc calls, in the same order, as the core's
per-tensor ops make (so the results are bit for bit the same), without the core's dispatch
around each of them. Scalars become 0-d arrays of each array's dtype, as the core's scalar
operands are.

float16 arrays follow the core's half-precision ops, which compute as PyTorch's CPU kernels:
``mul`` by a number, ``div``, ``lerp``, ``addcmul`` and ``addcdiv`` in float32, rounded
once (lerp from the nearer end, as the core's); ``add`` with alpha as PyTorch's add (see
``_half_add``); ``add_scalar`` in float16 with the number read through float32 (before
session 17 a float16 Adam step with foreach differed from the per-tensor step in 18 of 200
parameters after 3 steps)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
from tensorweaver.contract.cpu_loops import HALF_STEP, cached_scalar_loop_mask

from tensorweaver_numpy._quiet import quiet

A = np.ndarray


_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)


def _scalar(value: float, like: A) -> A:
    if like.dtype is _F16 and type(value) is float:
        value = np.float32(value)  # through float32, as the backend's full (PyTorch's reading)
    return np.asarray(value, like.dtype)


def _wide(a: A) -> A:
    return a.astype(_F32)


def _half_addc(ufunc: np.ufunc, x: A, y: A, z: A, value: float) -> A:
    """float16 ``x + ufunc(y * value, z)`` computed in float32, rounded once."""
    wide = _wide(x)
    return np.add(wide, ufunc(np.multiply(_wide(y), _scalar(value, wide)), _wide(z))).astype(_F16)


def _half_add(x: A, y: A, alpha: float) -> A:
    """float16 ``x + y * alpha`` as PyTorch's CPU ``add`` computes it: alpha rounded to
    float16, then in float32 (y * alpha exact there), rounded once, except the elements its
    scalar loop takes (``tensorweaver.contract.cpu_loops``), where y * alpha is rounded to
    float16 first (then the sum in float32, rounded: c10::Half's operators). As torch with
    one thread: above 32768 elements its threads split the loop, each part with its own tail."""
    a = np.float32(_scalar(alpha, y))
    if x.flags.c_contiguous and y.flags.c_contiguous:  # one loop over all, in C order
        shape, x = x.shape, x.reshape(-1)  # (0-d: an array, not a scalar)
        wide = np.multiply(y.reshape(-1).astype(_F32), a)
        tail = wide.size % HALF_STEP
        if tail:
            wide[-tail:] = wide[-tail:].astype(_F16)
        return np.add(wide, x, out=wide).astype(_F16).reshape(shape)
    wide = np.multiply(y.astype(_F32), a)
    scalar = cached_scalar_loop_mask(x.shape, (x.strides, y.strides), x.itemsize)
    if scalar is not None:
        np.copyto(wide, wide.astype(_F16), where=scalar)
    return np.add(wide, x, out=wide).astype(_F16)


def _lerp(x: A, y: A, weight: float) -> A:
    """The core's lerp of float32 or wider ``x`` and ``y`` (PyTorch's: from the nearer end)."""
    w = _scalar(weight, x)
    if abs(weight) < 0.5:
        return np.add(x, np.multiply(w, np.subtract(y, x)))
    return np.subtract(y, np.multiply(np.subtract(y, x), _scalar(1 - weight, x)))


class ForeachOps:
    """Mixed into the backend class; each method is one optional primitive."""

    @quiet
    def foreach_norm(self, xs: list[A], ord: float) -> list[A]:
        # The core's norm: |x| summed for 1, its largest for inf, sqrt of sum(x * x) for 2.
        norms = []
        for x in xs:
            axes = tuple(range(x.ndim))
            if x.dtype == _F16:  # (summed in float32, as PyTorch's opmath, then rounded)
                norms.append(self.foreach_norm([x.astype(np.float32)], ord)[0].astype(_F16))
            # (the backend's own sum: its accurate order over any layout, as the core's)
            elif ord == 2:
                norms.append(np.sqrt(self.sum(np.multiply(x, x), axes, False)))
            elif ord == math.inf:
                norms.append(np.maximum.reduce(np.absolute(x), axis=axes))
            else:
                norms.append(self.sum(np.absolute(x), axes, False))
        return [np.asarray(n) for n in norms]

    @quiet
    def foreach_add(self, xs: list[A], ys: list[A], alpha: float) -> list[A]:
        return [
            np.add(x, np.multiply(y, _scalar(alpha, y)))
            if x.dtype is not _F16
            else _half_add(x, y, alpha)
            for x, y in zip(xs, ys)
        ]

    @quiet
    def foreach_mul(self, xs: list[A], scalar: float) -> list[A]:
        return [
            np.multiply(x, _scalar(scalar, x))
            if x.dtype is not _F16
            else np.multiply(_wide(x), np.float32(scalar)).astype(_F16)
            for x in xs
        ]

    @quiet
    def foreach_add_scalar(self, xs: list[A], scalar: float) -> list[A]:
        return [np.add(x, _scalar(scalar, x)) for x in xs]

    @quiet
    def foreach_div_scalars(self, xs: list[A], scalars: list[float]) -> list[A]:
        return [
            np.true_divide(x, _scalar(s, x))
            if x.dtype is not _F16
            else np.true_divide(_wide(x), np.float32(s)).astype(_F16)
            for x, s in zip(xs, scalars)
        ]

    @quiet
    def foreach_sqrt(self, xs: list[A]) -> list[A]:
        return [np.sqrt(x) for x in xs]

    def foreach_maximum(self, xs: list[A], ys: list[A]) -> list[A]:
        return [np.maximum(x, y) for x, y in zip(xs, ys)]

    @quiet
    def foreach_lerp(self, xs: list[A], ys: list[A], weight: float) -> list[A]:
        return [
            np.add(x, np.multiply(_scalar(weight, x), np.subtract(y, x)))
            if x.dtype is not _F16
            else _lerp(_wide(x), _wide(y), weight).astype(_F16)
            for x, y in zip(xs, ys)
        ]

    @quiet
    def foreach_addcmul(self, xs: list[A], ys: list[A], zs: list[A], value: float) -> list[A]:
        return [
            np.add(x, np.multiply(np.multiply(y, _scalar(value, x)), z))
            if x.dtype is not _F16
            else _half_addc(np.multiply, x, y, z, value)
            for x, y, z in zip(xs, ys, zs)
        ]

    @quiet
    def foreach_addcdiv(
        self, xs: list[A], ys: list[A], zs: list[A], values: list[float]
    ) -> list[A]:
        return [
            np.add(x, np.true_divide(np.multiply(y, _scalar(v, x)), z))
            if x.dtype is not _F16
            else _half_addc(np.true_divide, x, y, z, v)
            for x, y, z, v in zip(xs, ys, zs, values)
        ]

    @quiet
    def foreach_inplace(self, name: str, xs: list[A], *args: Any) -> bool:
        if name == "add" and len(xs) == 1 and xs[0].dtype is not _F16:
            # One pair (``p.data.add_(g, alpha=-lr)``, once a parameter a step): the "add"
            # writer's two ufunc calls, without its lists, closure and float16 scan (a 200-element
            # pair: 5.3 -> 3.7 us)
            x, y = xs[0], args[0][0]
            np.add(x, np.multiply(y, _scalar(args[1], y)), out=x)
            return True
        write = _IN_PLACE.get(name)
        if write is None:
            return False
        if name in _WIDENED and any(x.dtype is _F16 for x in xs):
            # computed in float32 (see the module): the out-of-place values, copied in
            for x, result in zip(xs, getattr(self, f"foreach_{name}")(xs, *args)):
                np.copyto(x, result)
            return True
        write(xs, *args)
        return True


def _written(ufunc: Callable[..., A]) -> Callable[..., None]:
    """Each x = ufunc(x, *per-array operands) written into x: the out-of-place primitive's
    ufunc calls with ``out=x`` on the last, so the bits are the same."""

    def write(xs: list[A], *lists: list) -> None:
        for x, *operands in zip(xs, *lists):
            ufunc(x, *operands, out=x)

    return write


def _each(scalar: Any, xs: list[A]) -> list[A]:
    return [_scalar(scalar, x) for x in xs]


#: The primitives whose float16 results are float32 ones rounded once.
_WIDENED = frozenset(("add", "mul", "div_scalars", "lerp", "addcmul", "addcdiv"))
#: foreach_inplace's writers, one per out-of-place primitive above, with its ufuncs.
_IN_PLACE: dict[str, Callable[..., None]] = {
    "add": lambda xs, ys, alpha: _written(np.add)(
        xs, [np.multiply(y, _scalar(alpha, y)) for y in ys]
    ),
    "mul": lambda xs, scalar: _written(np.multiply)(xs, _each(scalar, xs)),
    "add_scalar": lambda xs, scalar: _written(np.add)(xs, _each(scalar, xs)),
    "div_scalars": lambda xs, scalars: _written(np.true_divide)(
        xs, [_scalar(s, x) for x, s in zip(xs, scalars)]
    ),
    "sqrt": lambda xs: _written(np.sqrt)(xs),
    "maximum": lambda xs, ys: _written(np.maximum)(xs, ys),
    "lerp": lambda xs, ys, weight: _written(np.add)(
        xs, [np.multiply(_scalar(weight, x), np.subtract(y, x)) for x, y in zip(xs, ys)]
    ),
    "addcmul": lambda xs, ys, zs, value: _written(np.add)(
        xs, [np.multiply(np.multiply(y, _scalar(value, x)), z) for x, y, z in zip(xs, ys, zs)]
    ),
    "addcdiv": lambda xs, ys, zs, values: _written(np.add)(
        xs,
        [
            np.true_divide(np.multiply(y, _scalar(v, x)), z)
            for x, y, z, v in zip(xs, ys, zs, values)
        ],
    ),
}
