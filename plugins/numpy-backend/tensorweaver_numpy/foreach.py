"""The optional foreach primitives of the backend API 2.4 (see ``OPTIONAL`` in
``tensorweaver.contract.ir``): the same ufunc calls, in the same order, as the core's
per-tensor ops make (so the results are bit for bit the same), without the core's dispatch
around each of them. Scalars become 0-d arrays of each array's dtype, as the core's scalar
operands are."""

from __future__ import annotations

import math

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
            np.add(x, np.multiply(np.multiply(y, z), _scalar(value, x)))
            for x, y, z in zip(xs, ys, zs)
        ]

    @quiet
    def foreach_addcdiv(
        self, xs: list[A], ys: list[A], zs: list[A], values: list[float]
    ) -> list[A]:
        return [
            np.add(x, np.multiply(np.true_divide(y, z), _scalar(v, x)))
            for x, y, z, v in zip(xs, ys, zs, values)
        ]
