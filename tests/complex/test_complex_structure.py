"""Moving, indexing and comparing complex tensors against PyTorch: slicing, advanced and
boolean indexing, writes, cat/stack/reshape/permute, where, masked_fill, index_select,
gather, scatter, eq/ne."""

from __future__ import annotations

import numpy as np
import pytest
from complex_reference import cplx, like_torch
from tensor_reference import signed


@pytest.mark.cunumeric
def test_indexing(backend: str) -> None:
    z = cplx((3, 4), 1)
    like_torch(lambda m, x: x[1], z)
    like_torch(lambda m, x: x[:, 1::2], z)
    like_torch(lambda m, x: x[..., None, -1], z)
    like_torch(lambda m, x: x[m.tensor([2, 0, 2])], z)
    like_torch(lambda m, x: x[m.tensor([0, 1]), m.tensor([3, 2])], z)
    like_torch(lambda m, x: x[x.real > 0], z)


def test_writes(backend: str) -> None:
    def run(m, x, y):
        x = x.clone()
        x[0] = 2 - 1j
        x[1, 1:3] = y[:2]
        x[x.imag < 0] = 0.5
        x.masked_fill_(x.real > 1, 3j)
        x[:, 0].zero_()
        return x

    like_torch(run, cplx((3, 4), 2), cplx((4,), 3))
    like_torch(
        lambda m, x, y: x.clone().index_put_((m.tensor([0, 2]),), y[:2]),
        cplx((3, 4), 4),
        cplx((2, 4), 5),
    )


def test_shape_ops(backend: str) -> None:
    z = cplx((2, 3, 4), 6)
    like_torch(lambda m, x: x.reshape(6, 4), z)
    like_torch(lambda m, x: x.view(4, -1), z)
    like_torch(lambda m, x: x.permute(2, 0, 1), z)
    like_torch(lambda m, x: x.transpose(0, 2).contiguous(), z)
    like_torch(lambda m, x: x.flatten(1), z)
    like_torch(lambda m, x: x.unsqueeze(1).expand(2, 5, 3, 4), z)
    like_torch(lambda m, x: x.flip(1).roll(1, 2), z)
    like_torch(lambda m, x: x.repeat(1, 2, 1), z)
    like_torch(lambda m, x: x.tril(), z[0])
    like_torch(lambda m, x: x.split(1, 1), z)
    like_torch(lambda m, x: x.unbind(0), z)
    like_torch(lambda m, x: x.narrow(2, 1, 2), z)


def test_joins(backend: str) -> None:
    a, b, r = cplx((2, 3), 7), cplx((2, 3), 8), signed((2, 3), seed=9)
    like_torch(lambda m, x, y: m.cat([x, y]), a, b)
    like_torch(lambda m, x, y: m.stack([x, y], dim=2), a, b)
    like_torch(lambda m, x, y: m.cat([x, y], 1), a, r)  # complex with real: promoted
    like_torch(lambda m, x, y: m.stack([y.float(), x.to(m.complex64)]), a, r)


def test_selection(backend: str) -> None:
    a, b, r = cplx((3, 4), 10), cplx((3, 4), 11), signed((3, 4), seed=12)
    mask = r > 0
    like_torch(lambda m, x, y, c: m.where(c > 0, x, y), a, b, r)
    like_torch(lambda m, x, c: m.where(c > 0, x, c), a, r)  # complex and real branches
    like_torch(lambda m, x, c: m.where(c > 0, x, 1j), a, r)
    like_torch(lambda m, c: m.where(c > 0, c, 2j), r)  # a real tensor and a complex scalar
    like_torch(lambda m, x, c: x.masked_fill(c > 0, 1 - 1j), a, r)
    like_torch(lambda m, x, c: x.masked_fill(c > 0, m.tensor(2j)), a, r)
    assert mask.any()
    index = np.array([2, 0])
    like_torch(lambda m, x, i: x.index_select(1, i), a, index)
    gathered = np.array([[0, 1, 1, 0], [2, 2, 0, 1]])
    like_torch(lambda m, x, i: x.gather(0, i), a, gathered)
    like_torch(lambda m, x, i: m.take_along_dim(x, i, 0), a, gathered)
    like_torch(lambda m, x, y, i: x.scatter(0, i, y), a, b, gathered[:, :2])
    like_torch(lambda m, x, y, i: x.scatter_add(0, i, y), a, b, gathered)
    like_torch(lambda m, x, y, i: x.index_add(1, i, y[:, :2]), a, b, index)


@pytest.mark.cunumeric
def test_equality(backend: str) -> None:
    a = cplx((3, 4), 13)
    b = a.copy()
    b[0, 1] += 1e-3j
    b[2, 2] = b[2, 2].real
    like_torch(lambda m, x, y: x == y, a, b)
    like_torch(lambda m, x, y: x != y, a, b)
    like_torch(lambda m, x, y: m.eq(x.to(m.complex64), y), a, b)
    like_torch(lambda m: m.tensor([1 + 0j, 2j]) == m.tensor([1.0, 0.0]))
    like_torch(lambda m: m.tensor([1 + 0j, 2j]) == 2j)
    like_torch(lambda m: m.tensor([1 + 0j, 2j]) != 1)
    like_torch(lambda m, x, y: m.equal(x, y), a, a)
    like_torch(lambda m, x, y: m.isclose(x, y), a, b)
    like_torch(lambda m, x, y: m.allclose(x, y), a, b)
