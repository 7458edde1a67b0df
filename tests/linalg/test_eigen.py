"""eigh, eigvalsh, svd, svdvals and the old ``tw.svd`` against PyTorch: values up to the
eigenvectors' signs (compared through gauge-invariant functions), gradients (also by finite
differences and second order), the documented behaviour at repeated eigenvalues and
rank-deficient input."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices, spd

DTYPES = ["float64", "float32"]


def _rebuild(m, a):  # noqa: ANN001, ANN202
    """V f(L) V^T: invariant under each eigenvector's sign."""
    values, vectors = m.linalg.eigh(a)
    return (vectors * values.exp().unsqueeze(-2)) @ vectors.mT


@pytest.mark.cunumeric
def test_eigh_like_torch_cheap(backend: str) -> None:
    compare(_rebuild, spd((3, 3)) / 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,), (0,), (2, 1)])
def test_eigh_like_torch(backend: str, dtype: str, batch: tuple) -> None:
    a = spd((*batch, 4, 4)) / 4
    compare(_rebuild, a, dtype=dtype)
    compare(lambda m, a: m.linalg.eigvalsh(a), a, dtype=dtype)
    compare(lambda m, a: m.linalg.eigh(a).eigenvectors.abs(), a, dtype=dtype)


def test_eigh_reads_one_triangle(backend: str) -> None:
    a = matrices((3, 3))
    for uplo in ("L", "U"):
        compare(lambda m, a, uplo=uplo: m.linalg.eigvalsh(a, UPLO=uplo), a)
    with pytest.raises(RuntimeError, match="UPLO"):
        tw.linalg.eigh(tw.tensor(a), UPLO="X")


def test_eigh_gradients_by_finite_differences(backend: str) -> None:
    def fn(a: tw.Tensor) -> tw.Tensor:
        return _rebuild(tw, a + a.mT)

    gradcheck(fn, matrices((2, 3, 3)) / 4)
    gradgradcheck(fn, matrices((3, 3)) / 4)
    gradgradcheck(lambda a: tw.linalg.eigvalsh(a + a.mT), matrices((3, 3)))


def test_eigh_at_repeated_eigenvalues(backend: str) -> None:
    """Eigenvalues stay differentiable; eigenvector gradients are not finite (PyTorch)."""
    q = np.linalg.qr(matrices((4, 4)))[0]
    a = q @ np.diag([1.0, 2.0, 2.0, 3.0]) @ q.T
    # A function that weighs equal eigenvalues equally: independent of the basis chosen
    compare(lambda m, a: m.linalg.eigvalsh(a).square().sum(), a)
    compare(lambda m, a: m.linalg.eigh(a).eigenvalues.square().sum(), a)
    gradcheck(lambda a: tw.linalg.eigvalsh((a + a.mT) / 2).square().sum(), a)
    for m in (tw, torch):
        x = m.tensor(a, requires_grad=True)
        m.linalg.eigh(x).eigenvectors.sum().backward()
        assert not np.abs(x.grad.numpy()).max() < 1e8  # inf, NaN or as good as infinite


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 0, 3, 2)])
def test_svd_like_torch(backend: str, dtype: str, shape: tuple) -> None:
    a = matrices(shape if len(shape) > 2 else (2, *shape))

    def rebuild(m, a):  # noqa: ANN001, ANN202
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        return (u * s.exp().unsqueeze(-2)) @ vh

    compare(rebuild, a, dtype=dtype)
    compare(lambda m, a: m.linalg.svdvals(a), a, dtype=dtype)
    k = min(a.shape[-2:])  # the rest of the full U and Vh is any basis of a null space
    compare(lambda m, a: m.linalg.svd(a).U[..., :k].abs(), a, dtype=dtype, grad=False)
    compare(lambda m, a: m.linalg.svd(a).Vh[..., :k, :].abs(), a, dtype=dtype, grad=False)


def test_svd_gradients_by_finite_differences(backend: str) -> None:
    def fn(a: tw.Tensor) -> tw.Tensor:
        u, s, vh = tw.linalg.svd(a, full_matrices=False)
        return (u * s.sqrt().unsqueeze(-2)) @ vh + (u @ u.mT).sum() + (vh.mT @ vh).sum()

    for shape in [(4, 3), (3, 4), (3, 3)]:
        gradcheck(fn, matrices(shape))
    gradgradcheck(lambda a: tw.linalg.svdvals(a), matrices((4, 3)))
    gradgradcheck(fn, matrices((2, 3)))


def test_svdvals_of_rank_deficient_input(backend: str) -> None:
    """The zero singular value's vectors are any basis of the null spaces: only the others
    have a gradient."""
    a = matrices((4, 2)) @ matrices((2, 3), 1)
    compare(lambda m, a: m.linalg.svdvals(a), a, grad=False)
    compare(lambda m, a: m.linalg.svdvals(a)[:2], a)
    gradcheck(lambda a: tw.linalg.svdvals(a)[:2], a)


@pytest.mark.parametrize("some", [True, False])
def test_old_svd_returns_v(backend: str, some: bool) -> None:
    a = matrices((2, 5, 3))
    u, s, v = tw.svd(tw.tensor(a), some=some)
    tu, ts, tv = torch.svd(torch.tensor(a), some=some)
    assert (u.shape, s.shape, v.shape) == (tu.shape, ts.shape, tv.shape)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), atol=1e-10)
    u, s, v = tw.svd(tw.tensor(a), compute_uv=False)
    tu, ts, tv = torch.svd(torch.tensor(a), compute_uv=False)
    assert (u.shape, v.shape) == (tu.shape, tv.shape) and not u.numpy().any()
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-10)
