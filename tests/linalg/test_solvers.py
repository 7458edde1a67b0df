"""solve, solve_triangular, inv (and their ``_ex``), pinv, lstsq, matrix_rank,
cholesky_solve and cholesky_inverse against PyTorch: values, gradients (also by finite
differences and second order), broadcast batches, vectors, errors for singular input."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices, spd

DTYPES = ["float64", "float32"]
SINGULAR = [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]


@pytest.mark.cunumeric
def test_solve_like_torch_cheap(backend: str) -> None:
    compare(lambda m, a, b: m.linalg.solve(a, b), matrices((3, 3)), matrices((3, 2), 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shapes",
    [((4, 4), (4, 2)), ((4, 4), (4,)), ((2, 4, 4), (2, 4)), ((2, 1, 3, 3), (4, 3, 1)),
     ((0, 3, 3), (0, 3, 2))],
)  # fmt: skip
def test_solve_like_torch(backend: str, dtype: str, shapes: tuple) -> None:
    a, b = matrices(shapes[0]), np.random.default_rng(1).standard_normal(shapes[1])
    compare(lambda m, a, b: m.linalg.solve(a, b), a, b, dtype=dtype)


def test_solve_left_false_and_gradients(backend: str) -> None:
    a, b = matrices((2, 3, 3)), matrices((2, 4, 3), 1)
    compare(lambda m, a, b: m.linalg.solve(a, b, left=False), a, b)
    gradcheck(lambda a, b: tw.linalg.solve(a, b), a, np.swapaxes(b, -1, -2))
    gradgradcheck(lambda a, b: tw.linalg.solve(a, b), a[0], b[0].T)


def test_solve_errors_like_torch(backend: str) -> None:
    a = matrices((2, 3, 3))
    a[1] = SINGULAR
    b = np.ones((2, 3, 1))
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.solve(torch.tensor(a), torch.tensor(b))
    with pytest.raises(tw.linalg.LinAlgError) as ours:
        tw.linalg.solve(tw.tensor(a), tw.tensor(b))
    assert str(ours.value) == str(theirs.value)
    x, info = tw.linalg.solve_ex(tw.tensor(a), tw.tensor(b))
    assert info.tolist() == [0, 3] and np.isfinite(x[0].numpy()).all()
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B.*\(3x3 and 2x1\)"):
        tw.linalg.solve(tw.ones(3, 3, dtype=tw.float64), tw.ones(2, dtype=tw.float64))
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        tw.linalg.solve(tw.ones(2, 3, dtype=tw.float64), tw.ones(2, dtype=tw.float64))
    with pytest.raises(RuntimeError, match="same dtype"):
        tw.linalg.solve(tw.tensor(a), tw.tensor(b).float())
    other = "numpy" if backend != "numpy" else "torch:cpu"
    with pytest.raises(RuntimeError, match="one device"):
        tw.linalg.solve(tw.tensor(a), tw.tensor(b).to(other))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [False, True])
def test_solve_triangular_like_torch(
    backend: str, dtype: str, upper: bool, left: bool, unitriangular: bool
) -> None:
    a, b = matrices((2, 4, 4)), matrices((3, 1, 4, 2) if left else (3, 1, 2, 4), 1)

    def fn(m, a, b):  # noqa: ANN001, ANN202
        return m.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular)

    compare(fn, a, b, dtype=dtype)


def test_solve_triangular_gradients_by_finite_differences(backend: str) -> None:
    def fn(a: tw.Tensor, b: tw.Tensor) -> tw.Tensor:
        return tw.linalg.solve_triangular(a, b, upper=False)

    gradcheck(fn, matrices((2, 3, 3)), matrices((2, 3, 2), 1))
    gradgradcheck(fn, matrices((3, 3)), matrices((3, 2), 1))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_like_torch(backend: str, dtype: str) -> None:
    compare(lambda m, a: m.linalg.inv(a), matrices((2, 4, 4)), dtype=dtype)
    compare(lambda m, a: m.inverse(a), matrices((3, 3)), dtype=dtype)


def test_inv_errors_and_info(backend: str) -> None:
    a = matrices((2, 3, 3))
    a[1] = SINGULAR
    for single in (False, True):
        x = a[1] if single else a
        with pytest.raises(RuntimeError) as theirs:
            torch.linalg.inv(torch.tensor(x))
        with pytest.raises(tw.linalg.LinAlgError) as ours:
            tw.linalg.inv(tw.tensor(x))
        assert str(ours.value) == str(theirs.value)
    assert tw.linalg.inv_ex(tw.tensor(a)).info.tolist() == [0, 3]
    gradgradcheck(lambda a: tw.linalg.inv(a), matrices((3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 0, 3)])
def test_pinv_like_torch(backend: str, dtype: str, shape: tuple) -> None:
    compare(lambda m, a: m.linalg.pinv(a), matrices((2, *shape)), dtype=dtype)


def test_pinv_rank_deficient_and_tolerances(backend: str) -> None:
    """PyTorch's pinv gradient stays finite where A is rank deficient."""
    a = matrices((4, 2)) @ matrices((2, 3), 1)  # rank 2
    compare(lambda m, a: m.linalg.pinv(a), a)
    compare(lambda m, a: m.linalg.pinv(a.mT), a)
    compare(lambda m, a: m.linalg.pinv(a, atol=1.5), a)
    compare(lambda m, a: m.linalg.pinv(a, rtol=0.5), a)
    compare(lambda m, a: m.linalg.pinv(a, hermitian=True), spd((3, 3)))
    x = tw.tensor(a, requires_grad=True)
    tw.linalg.pinv(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    gradgradcheck(lambda a: tw.linalg.pinv(a), matrices((3, 2)))


def test_matrix_rank_like_torch(backend: str) -> None:
    full = matrices((2, 4, 3))
    low = matrices((2, 4, 2)) @ matrices((2, 2, 3), 1)
    for a in (full, low, np.zeros((2, 3, 3))):
        assert tw.linalg.matrix_rank(tw.tensor(a)).tolist() == (
            torch.linalg.matrix_rank(torch.tensor(a)).tolist()
        )
    rank = tw.linalg.matrix_rank(tw.tensor(low), atol=1.0, rtol=0.0)
    assert rank.dtype == tw.int64
    assert rank.tolist() == torch.linalg.matrix_rank(torch.tensor(low), atol=1.0, rtol=0.0).tolist()
    herm = spd((3, 3)) - 3 * np.eye(3)
    assert tw.linalg.matrix_rank(tw.tensor(herm), hermitian=True).item() == (
        torch.linalg.matrix_rank(torch.tensor(herm), hermitian=True).item()
    )


@pytest.mark.parametrize("driver", [None, "gels", "gelsd", "gelss"])
def test_lstsq_like_torch(backend: str, driver: str | None) -> None:
    a, b = matrices((2, 5, 3)), matrices((2, 5, 2), 1)
    ours = tw.linalg.lstsq(tw.tensor(a), tw.tensor(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        o, t = getattr(ours, name), getattr(theirs, name)
        assert tuple(o.shape) == tuple(t.shape), name
        np.testing.assert_allclose(o.numpy(), t.numpy(), atol=1e-10, err_msg=name)
    compare(lambda m, a, b: m.linalg.lstsq(a, b, driver=driver).solution, a, b)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_like_torch(backend: str, upper: bool) -> None:
    a, b = spd((2, 4, 4)), matrices((2, 4, 3), 1)

    def solve(m, a, b):  # noqa: ANN001, ANN202
        return m.cholesky_solve(b, m.linalg.cholesky(a, upper=upper), upper=upper)

    def inverse(m, a):  # noqa: ANN001, ANN202
        return m.cholesky_inverse(m.linalg.cholesky(a, upper=upper), upper=upper)

    compare(solve, a, b)
    compare(inverse, a)
