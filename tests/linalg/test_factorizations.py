"""Cholesky, QR, LU (lu, lu_factor, lu_solve) and householder_product against PyTorch in
float64 and float32: values, gradients (also by finite differences and second order),
batches (empty too), non-square shapes, errors naming the batch element, ``_ex`` info."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices, spd

BATCHES = [(), (2,), (0,), (2, 1)]
DTYPES = ["float64", "float32"]


@pytest.mark.cunumeric
@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky_like_torch_cheap(backend: str, batch: tuple) -> None:
    compare(lambda m, a: m.linalg.cholesky(a), spd((*batch, 3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_like_torch(backend: str, dtype: str, batch: tuple, upper: bool) -> None:
    compare(lambda m, a: m.linalg.cholesky(a, upper=upper), spd((*batch, 5, 5)), dtype=dtype)


def test_cholesky_gradients_by_finite_differences(backend: str) -> None:
    def fn(a: tw.Tensor) -> tw.Tensor:
        return tw.linalg.cholesky(a @ a.mT + 4 * tw.eye(3, dtype=tw.float64))

    x = matrices((2, 3, 3))
    gradcheck(fn, x)
    gradgradcheck(fn, x)


def test_cholesky_error_names_the_batch_element_and_minor(backend: str) -> None:
    a = spd((3, 4, 4))
    a[1, 1, 1] = -5.0
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.cholesky(torch.tensor(a))
    with pytest.raises(tw.linalg.LinAlgError) as ours:
        tw.linalg.cholesky(tw.tensor(a))
    assert isinstance(ours.value, RuntimeError)
    assert str(ours.value) == str(theirs.value)
    assert "(Batch element 1)" in str(ours.value) and "order 2" in str(ours.value)


def test_error_in_a_large_batch_names_its_element(backend: str) -> None:
    a = spd((100, 2, 2))  # more info codes than the small-batch check reads as bytes
    a[70, 1, 1] = -5.0
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.cholesky(torch.tensor(a))
    with pytest.raises(tw.linalg.LinAlgError) as ours:
        tw.linalg.cholesky(tw.tensor(a))
    assert str(ours.value) == str(theirs.value) and "(Batch element 70)" in str(ours.value)
    tw.linalg.cholesky(tw.tensor(spd((100, 2, 2))))  # and none: no error


def test_cholesky_ex_returns_info(backend: str) -> None:
    a = spd((3, 4, 4))
    a[2, 3, 3] = -50.0
    _, info = tw.linalg.cholesky_ex(tw.tensor(a))
    assert info.tolist() == torch.linalg.cholesky_ex(torch.tensor(a)).info.tolist() == [0, 0, 4]
    with pytest.raises(tw.linalg.LinAlgError, match="Batch element 2"):
        tw.linalg.cholesky_ex(tw.tensor(a), check_errors=True)


@pytest.mark.cunumeric
@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (3, 5)])
def test_qr_reconstructs_and_is_orthonormal(backend: str, shape: tuple) -> None:
    a = matrices((2, *shape))
    q, r = tw.linalg.qr(tw.tensor(a))
    q, r = q.numpy(), r.numpy()
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(
        np.swapaxes(q, -1, -2) @ q,
        np.broadcast_to(np.eye(q.shape[-1]), (2, q.shape[-1], q.shape[-1])),
        atol=1e-12,
    )
    np.testing.assert_allclose(np.tril(r, -1), 0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (0, 3, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_like_torch(backend: str, dtype: str, shape: tuple, mode: str) -> None:
    differentiable = mode == "reduced" or shape[-2] <= shape[-1]

    def fn(m, a):  # noqa: ANN001, ANN202
        q, r = m.linalg.qr(a, mode=mode)
        return m.cat([q.flatten(-2), r.flatten(-2)], -1)

    compare(fn, matrices((2, *shape)), dtype=dtype, grad=differentiable)


def test_qr_gradients_by_finite_differences(backend: str) -> None:
    for shape in [(4, 3), (3, 5)]:
        gradcheck(
            lambda a: tw.linalg.qr(a)[0].sum(-1) + tw.linalg.qr(a)[1][..., 0, :].sum(),
            matrices(shape),
        )
    gradgradcheck(lambda a: tw.linalg.qr(a)[1], matrices((4, 3)))


def test_qr_modes_and_their_errors(backend: str) -> None:
    a = tw.tensor(matrices((5, 3)), requires_grad=True)
    q, r = tw.linalg.qr(a, mode="r")
    assert q.numel() == 0 and r.shape == (3, 3)
    with pytest.raises(RuntimeError, match="mode='r'"):
        r.sum().backward()
    q, r = tw.linalg.qr(a, mode="complete")
    assert q.shape == (5, 5)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        q.sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode"):
        tw.linalg.qr(a, mode="full")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 0, 4, 4)])
def test_lu_like_torch(backend: str, dtype: str, shape: tuple) -> None:
    a = matrices(shape if len(shape) > 2 else (2, *shape))

    def fn(m, a):  # noqa: ANN001, ANN202
        p, low, up = m.linalg.lu(a)
        parts = [p.flatten(-2), low.flatten(-2)]
        return m.cat([*parts, up.flatten(-2)], -1)

    compare(fn, a, dtype=dtype)
    compare(lambda m, a: m.linalg.lu_factor(a).LU, a, dtype=dtype)
    ours = tw.linalg.lu_factor(tw.tensor(a)).pivots
    assert ours.dtype == tw.int32
    assert ours.tolist() == torch.linalg.lu_factor(torch.tensor(a)).pivots.tolist()


def test_lu_gradients_by_finite_differences(backend: str) -> None:
    for shape in [(3, 3), (4, 3), (3, 4)]:
        gradcheck(lambda a: tw.linalg.lu_factor(a).LU, matrices(shape))
    gradgradcheck(lambda a: tw.linalg.lu_factor(a).LU, matrices((3, 3)))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_like_torch(backend: str, left: bool, adjoint: bool) -> None:
    a, b = matrices((2, 4, 4)), matrices((3, 1, 4, 2), seed=1)
    b = b if left else np.swapaxes(b, -1, -2)

    def fn(m, a, b):  # noqa: ANN001, ANN202
        return m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=left, adjoint=adjoint)

    compare(fn, a, b)


def test_lu_factor_singular_error_and_info(backend: str) -> None:
    a = matrices((2, 3, 3))
    a[1] = [[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]
    with pytest.raises(RuntimeError) as theirs:
        torch.linalg.lu_factor(torch.tensor(a))
    with pytest.raises(RuntimeError) as ours:
        tw.linalg.lu_factor(tw.tensor(a))
    assert str(ours.value) == str(theirs.value)
    assert not isinstance(ours.value, tw.linalg.LinAlgError)  # a plain RuntimeError there
    info = tw.linalg.lu_factor_ex(tw.tensor(a)).info
    assert info.tolist() == torch.linalg.lu_factor_ex(torch.tensor(a)).info.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3, 2), (4, 4, 4), (2, 3, 3, 1)])
def test_householder_product_like_torch(backend: str, dtype: str, shape: tuple) -> None:
    *batch, m, n, k = shape
    a, tau = matrices((*batch, m, n)), np.random.default_rng(2).uniform(0.5, 1.5, (*batch, k))
    compare(lambda t, a, tau: t.linalg.householder_product(a, tau), a, tau, dtype=dtype)


def test_grad_fn_names_like_torch(backend: str) -> None:
    a, s = matrices((3, 3)), spd((3, 3))
    cases = {
        "cholesky": lambda m, a, s: m.linalg.cholesky(s, upper=True),
        "eigh": lambda m, a, s: m.linalg.eigh(s).eigenvectors,
        "svd": lambda m, a, s: m.linalg.svd(a).S,
        "qr": lambda m, a, s: m.linalg.qr(a).R,
        "lu": lambda m, a, s: m.linalg.lu(a).U,
        "lu_factor": lambda m, a, s: m.linalg.lu_factor(a).LU,
        "solve": lambda m, a, s: m.linalg.solve(a, s),
        "solve_triangular": lambda m, a, s: m.linalg.solve_triangular(a, s, upper=True),
        "inv": lambda m, a, s: m.linalg.inv(a),
        "det": lambda m, a, s: m.linalg.det(a),
        "slogdet": lambda m, a, s: m.linalg.slogdet(a).logabsdet,
        "pinv": lambda m, a, s: m.linalg.pinv(a),
    }
    for name, fn in cases.items():
        outs = [
            fn(m, m.tensor(a, requires_grad=True), m.tensor(s, requires_grad=True))
            for m in (tw, torch)
        ]
        names = [type(out.grad_fn).__name__ for out in outs]
        assert names[0] == names[1], name
