"""Reductions of complex tensors against PyTorch: sum, mean, prod, var and std (real, of
|x - mean|^2), cumsum, cumprod, norm, and the truth reductions."""

from __future__ import annotations

import pytest
from complex_reference import cplx, like_torch


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_sum_mean_prod(backend: str, dtype: str) -> None:
    z = cplx((3, 4, 2), 1)
    for op in ("sum", "mean", "prod"):
        like_torch(lambda m, x, op=op: getattr(x.to(getattr(m, dtype)), op)(), z)
        like_torch(lambda m, x, op=op: getattr(x.to(getattr(m, dtype)), op)(1), z)
    like_torch(lambda m, x: x.to(getattr(m, dtype)).sum((0, 2), keepdim=True), z)
    like_torch(lambda m, x: x.to(getattr(m, dtype)).mean(-1, keepdim=True), z)


@pytest.mark.cunumeric
def test_sum_and_mean_on_empty_and_0d(backend: str) -> None:
    like_torch(lambda m, x: x.sum(), cplx((0, 3), 2))
    like_torch(lambda m, x: x.sum(0), cplx((0, 3), 2))
    like_torch(lambda m, x: x.mean(), cplx((), 3))
    like_torch(lambda m, x: x.sum(), cplx((2, 3), 4))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_var_std_are_real(backend: str, dtype: str) -> None:
    z = cplx((4, 5), 5)
    for op in ("var", "std"):
        like_torch(lambda m, x, op=op: getattr(x.to(getattr(m, dtype)), op)(), z)
        like_torch(lambda m, x, op=op: getattr(x.to(getattr(m, dtype)), op)(0), z)
        like_torch(lambda m, x, op=op: getattr(x, op)(1, correction=0, keepdim=True), z)
        like_torch(lambda m, x, op=op: getattr(m, op)(x, (0, 1), unbiased=False), z)
    like_torch(lambda m, x: m.var_mean(x, 1), z)
    like_torch(lambda m, x: m.std_mean(x, 0), z)


def test_cumulative(backend: str) -> None:
    z = cplx((3, 4), 6)
    like_torch(lambda m, x: x.cumsum(1), z)
    like_torch(lambda m, x: m.cumsum(x.to(m.complex64), 0), z)
    like_torch(lambda m, x: x.cumprod(1), z)


def test_norm_and_truth(backend: str) -> None:
    z = cplx((3, 4), 7)
    like_torch(lambda m, x: x.norm(), z)
    like_torch(lambda m, x: x.norm(dim=1), z)
    like_torch(lambda m, x: x.abs().sum(), z)
    like_torch(lambda m: m.tensor([0j, 1j, 0, 2]).count_nonzero())
    like_torch(lambda m: m.tensor([[0j, 1j], [1, 2]]).all(1))
    like_torch(lambda m: m.tensor([[0j, 1j], [0, 0]]).any(1))
    like_torch(lambda m: m.tensor([1j, 0]).nonzero())
