"""``CatTransform(tseq, dim=0, lengths=None)`` and ``StackTransform(tseq, dim=0)``: a
different transform on each part of a tensor along ``dim`` (consecutive blocks of
``lengths``, or single slices), with the matching constraints on the whole."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from tensorweaver.distributions import constraints
from tensorweaver.distributions.independent import sum_rightmost
from tensorweaver.distributions.transforms import Transform
from tensorweaver.ops.movement import cat, stack
from tensorweaver.tensor import Tensor


def _check_dim(name: str, z: Tensor, dim: int, length: int) -> None:
    if not -z.ndim <= dim < z.ndim:
        raise AssertionError(f"dim {dim} out of range for {name} with {z.ndim} dimensions")
    if z.shape[dim] != length:
        raise AssertionError(f"{name}.size({dim}) = {z.shape[dim]} must equal length {length}")


class CatTransform(Transform):
    def __init__(
        self,
        tseq: Sequence[Transform],
        dim: int = 0,
        lengths: Sequence[int] | None = None,
        cache_size: int = 0,
    ) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq]
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim
        self.length = sum(self.lengths)
        self.bijective = all(t.bijective for t in self.transforms)
        self.domain = constraints.cat([t.domain for t in self.transforms], dim, self.lengths)
        self.codomain = constraints.cat([t.codomain for t in self.transforms], dim, self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size=cache_size)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    def _map(self, z: Tensor, name: str, apply: Callable[[Transform, Tensor], Tensor]) -> Tensor:
        _check_dim(name, z, self.dim, self.length)
        parts, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            parts.append(apply(t, z.narrow(self.dim, start, length)))
            start += length
        return cat(parts, self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return self._map(x, "x", lambda t, part: t(part))

    def _inverse(self, y: Tensor) -> Tensor:
        return self._map(y, "y", lambda t, part: t.inv(part))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        _check_dim("x", x, self.dim, self.length)
        _check_dim("y", y, self.dim, self.length)
        terms: list[Any] = []
        start = 0
        for t, length in zip(self.transforms, self.lengths):
            term = t.log_abs_det_jacobian(
                x.narrow(self.dim, start, length), y.narrow(self.dim, start, length)
            )
            terms.append(sum_rightmost(term, self.event_dim - t.event_dim))
            start += length
        # dim counted from the right past the event dimensions: still a batch dimension of
        # the log-determinant (concatenate there) or inside the event (sum the parts)
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        return cat(terms, dim) if dim < 0 else sum(terms[1:], terms[0])


class StackTransform(Transform):
    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq]
        self.dim = dim
        self.bijective = all(t.bijective for t in self.transforms)
        self.domain = constraints.stack([t.domain for t in self.transforms], dim)
        self.codomain = constraints.stack([t.codomain for t in self.transforms], dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size=cache_size)

    def _map(self, z: Tensor, name: str, apply: Callable[[Transform, Tensor], Tensor]) -> Tensor:
        _check_dim(name, z, self.dim, len(self.transforms))
        parts = z.unbind(self.dim)
        return stack([apply(t, part) for t, part in zip(self.transforms, parts)], self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return self._map(x, "x", lambda t, part: t(part))

    def _inverse(self, y: Tensor) -> Tensor:
        return self._map(y, "y", lambda t, part: t.inv(part))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        _check_dim("x", x, self.dim, len(self.transforms))
        _check_dim("y", y, self.dim, len(self.transforms))
        terms = [
            t.log_abs_det_jacobian(xs, ys)
            for t, xs, ys in zip(self.transforms, x.unbind(self.dim), y.unbind(self.dim))
        ]
        return stack(terms, self.dim)
