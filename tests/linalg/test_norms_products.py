"""Norms (vector_norm, matrix_norm, norm) and products (matrix_power, matrix_exp, multi_dot,
cross, vander) against PyTorch: values, gradients, dims, keepdim, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices

DTYPES = ["float64", "float32"]
ORDS = ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]


@pytest.mark.cunumeric
def test_matrix_norm_like_torch_cheap(backend: str) -> None:
    compare(lambda m, a: m.linalg.matrix_norm(a), matrices((2, 3, 4)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ORDS)
def test_matrix_norm_like_torch(backend: str, dtype: str, ord: object) -> None:  # noqa: A002
    a = matrices((2, 5, 3))
    compare(lambda m, a: m.linalg.matrix_norm(a, ord), a, dtype=dtype)
    compare(lambda m, a: m.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True), a, dtype=dtype)
    compare(lambda m, a: m.linalg.norm(a, ord, dim=(-1, 1)), a, dtype=dtype)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, math.inf, -math.inf])
def test_vector_norm_like_torch(backend: str, ord: float) -> None:  # noqa: A002
    a = matrices((2, 3, 4))
    grad = ord != 0
    compare(lambda m, a: m.linalg.vector_norm(a, ord), a, grad=grad)
    compare(lambda m, a: m.linalg.vector_norm(a, ord, dim=(0, 2), keepdim=True), a, grad=grad)
    compare(lambda m, a: m.linalg.norm(a, ord, dim=1), a, grad=grad)
    compare(lambda m, a: m.linalg.norm(a[0, 0], ord), a, grad=grad)


def test_norm_defaults_and_errors(backend: str) -> None:
    a = matrices((2, 3, 4))
    compare(lambda m, a: m.linalg.norm(a), a)
    compare(lambda m, a: m.linalg.norm(a, keepdim=True), a)
    compare(lambda m, a: m.linalg.norm(a[0], "nuc"), a)
    compare(lambda m, a: m.linalg.vector_norm(a, dtype=m.float64), a, dtype="float32")
    with pytest.raises(RuntimeError, match="without narrowing"):
        tw.linalg.vector_norm(tw.tensor(a), dtype=tw.float32)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        tw.linalg.norm(tw.tensor(a), 2)
    with pytest.raises(RuntimeError, match="floating point"):
        tw.linalg.vector_norm(tw.ones(3, dtype=tw.int64))


@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power_like_torch(backend: str, n: int) -> None:
    a = matrices((2, 3, 3)) / 3
    compare(lambda m, a: m.linalg.matrix_power(a, n), a, grad=n != 0)
    compare(lambda m, a: m.matrix_power(a, n), a[0], grad=n != 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])
def test_matrix_exp_like_torch(backend: str, dtype: str, scale: float) -> None:
    a = np.random.default_rng(0).standard_normal((2, 4, 4)) * scale / 4
    tol = (1e-12 if dtype == "float64" else 1e-5) * max(1, scale**2)
    compare(lambda m, a: m.linalg.matrix_exp(a), a, dtype=dtype, tol=tol)
    compare(lambda m, a: m.matrix_exp(a), a[0], dtype=dtype, tol=tol)


def test_matrix_exp_gradients_by_finite_differences(backend: str) -> None:
    a = np.random.default_rng(0).standard_normal((3, 3))
    gradcheck(lambda a: tw.linalg.matrix_exp(a), a)
    gradgradcheck(lambda a: tw.linalg.matrix_exp(a), a / 2)


@pytest.mark.parametrize(
    "shapes",
    [[(4,), (4, 3), (3, 5)], [(2, 6), (6, 3), (3, 1), (1, 4)], [(5, 2), (2,)], [(3,), (3,)]],
)
def test_multi_dot_like_torch(backend: str, shapes: list) -> None:
    arrays = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate(shapes)]
    compare(lambda m, *xs: m.linalg.multi_dot(list(xs)), *arrays)


def test_multi_dot_errors(backend: str) -> None:
    with pytest.raises(RuntimeError, match="at least 2"):
        tw.linalg.multi_dot([tw.ones(2, 2)])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        tw.linalg.multi_dot([tw.ones(2, 3), tw.ones(2, 3)])


def test_cross_and_vander_like_torch(backend: str) -> None:
    a, b = matrices((2, 1, 3)), matrices((1, 4, 3), 1)
    compare(lambda m, a, b: m.linalg.cross(a, b), a, b)
    compare(lambda m, a, b: m.linalg.cross(a.mT, b.mT, dim=-2), a, b)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        tw.linalg.cross(tw.tensor(a), tw.tensor(b[0]))
    x = np.array([[0.0, 1.5, -2.0], [0.5, 1.0, 3.0]])
    compare(lambda m, x: m.linalg.vander(x), x)
    compare(lambda m, x: m.linalg.vander(x, N=5), x)
    assert tw.linalg.vander(tw.tensor([1, 2, 3])).tolist() == [[1, 1, 1], [1, 2, 4], [1, 3, 9]]


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, math.inf])
def test_cond_like_torch(backend: str, p: object) -> None:
    a = matrices((2, 3, 3))
    # PyTorch 2.13's own backward fails for the norms through inv (an in-place write)
    through_svd = p in (None, 2, -2)
    compare(lambda m, a: m.linalg.cond(a, p), a, grad=through_svd)
    if not through_svd:
        gradcheck(lambda a: tw.linalg.cond(a, p), a)


def test_vecdot_diagonal_matmul_like_torch(backend: str) -> None:
    a, b = matrices((2, 3, 4)), matrices((3, 4), 1)
    compare(lambda m, a, b: m.linalg.vecdot(a, b), a, b)
    compare(lambda m, a, b: m.linalg.vecdot(a, b, dim=-2), a, b)
    compare(lambda m, a: m.linalg.diagonal(a, offset=1), a)
    compare(lambda m, a, b: m.linalg.matmul(a, b.mT), a, b)


def test_tensorinv_and_tensorsolve_like_torch(backend: str) -> None:
    a = matrices((6, 6)).reshape(2, 3, 6)
    compare(lambda m, a: m.linalg.tensorinv(a, ind=2), a)
    b = np.random.default_rng(1).standard_normal((2, 3))
    compare(lambda m, a, b: m.linalg.tensorsolve(a, b), a.reshape(2, 3, 2, 3), b)
    compare(lambda m, a, b: m.linalg.tensorsolve(a, b, dims=(0,)), a.reshape(2, 3, 2, 3), b)
    with pytest.raises(RuntimeError, match="tensorinv"):
        tw.linalg.tensorinv(tw.ones(2, 3, dtype=tw.float64), ind=1)
