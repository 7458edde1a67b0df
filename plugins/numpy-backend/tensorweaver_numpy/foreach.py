"""The optional foreach primitives of the backend API 2.4 (see ``OPTIONAL`` in
``tensorweaver.contract.ir``): the same ufunc calls, in the same order, as the core's
per-tensor ops make (so the results are bit for bit the same), without the core's dispatch
around each of them. Scalars become 0-d arrays of each array's dtype, as the core's scalar
operands are."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tensorweaver_numpy._quiet import quiet

A = np.ndarray


def _scalar(value: float, like: A) -> A:
    return np.asarray(value, like.dtype)


class ForeachOps:
    """Mixed into the backend class; each method is one optional primitive."""

    @quiet
    def foreach_norm(self, xs: list[A], ord: float) -> list[A]:
        # The core's norm: |x| summed for 1, its largest for inf, sqrt of sum(x * x) for 2.
        norms = []
        for x in xs:
            axes = tuple(range(x.ndim))
            if ord == 2:
                norms.append(np.sqrt(np.add.reduce(np.multiply(x, x), axis=axes, dtype=x.dtype)))
            elif ord == math.inf:
                norms.append(np.maximum.reduce(np.absolute(x), axis=axes))
            else:
                norms.append(np.add.reduce(np.absolute(x), axis=axes, dtype=x.dtype))
        return [np.asarray(n) for n in norms]

    @quiet
    def foreach_add(self, xs: list[A], ys: list[A], alpha: float) -> list[A]:
        return [np.add(x, np.multiply(y, _scalar(alpha, y))) for x, y in zip(xs, ys)]

    @quiet
    def foreach_mul(self, xs: list[A], scalar: float) -> list[A]:
        return [np.multiply(x, _scalar(scalar, x)) for x in xs]

    @quiet
    def foreach_add_scalar(self, xs: list[A], scalar: float) -> list[A]:
        return [np.add(x, _scalar(scalar, x)) for x in xs]

    @quiet
    def foreach_div_scalars(self, xs: list[A], scalars: list[float]) -> list[A]:
        return [np.true_divide(x, _scalar(s, x)) for x, s in zip(xs, scalars)]

    @quiet
    def foreach_sqrt(self, xs: list[A]) -> list[A]:
        return [np.sqrt(x) for x in xs]

    def foreach_maximum(self, xs: list[A], ys: list[A]) -> list[A]:
        return [np.maximum(x, y) for x, y in zip(xs, ys)]

    @quiet
    def foreach_lerp(self, xs: list[A], ys: list[A], weight: float) -> list[A]:
        return [
            np.add(x, np.multiply(_scalar(weight, x), np.subtract(y, x))) for x, y in zip(xs, ys)
        ]

    @quiet
    def foreach_addcmul(self, xs: list[A], ys: list[A], zs: list[A], value: float) -> list[A]:
        return [
            np.add(x, np.multiply(np.multiply(y, _scalar(value, x)), z))
            for x, y, z in zip(xs, ys, zs)
        ]

    @quiet
    def foreach_addcdiv(
        self, xs: list[A], ys: list[A], zs: list[A], values: list[float]
    ) -> list[A]:
        return [
            np.add(x, np.true_divide(np.multiply(y, _scalar(v, x)), z))
            for x, y, z, v in zip(xs, ys, zs, values)
        ]

    @quiet
    def foreach_inplace(self, name: str, xs: list[A], *args: Any) -> bool:
        write = _IN_PLACE.get(name)
        if write is None:
            return False
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
