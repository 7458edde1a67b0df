"""Regression tests for the defects a review of the op-database linalg / stft fixes found
(vander dtypes, lstsq outputs, ldl_solve checks, istft bin count), each against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from opinfo.twins import to_tw
from tensorweaver.linalg.householder import geqrf

BACKENDS = ["numpy", "torch:cpu"]


def _same_error(ours, theirs) -> None:
    """Both callables raise, with the same exception class."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(expected.type):
        ours()


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.int64])
def test_vander_of_integers_is_int64(backend, dtype):
    # Before: the input's dtype was kept (int32, uint8: wrapping at 256 where torch does not).
    x = torch.tensor([1, 2, 3, 20], dtype=dtype)
    theirs = torch.linalg.vander(x, N=3)
    ours = tw.linalg.vander(_tw(x), N=3)
    assert ours.dtype is tw.int64
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def test_vander_of_float16_raises_as_torch(backend):
    # Before: computed a result where torch refuses half precision.
    x = torch.tensor([1.0, 2.0], dtype=torch.float16)
    _same_error(lambda: tw.linalg.vander(_tw(x)), lambda: torch.linalg.vander(x))


@pytest.mark.parametrize("driver", ["gels", "gelsd", "gelss"])
def test_lstsq_vector_b_keeps_residual_column(backend, driver):
    # Before: residuals of a vector B had shape () where torch's have shape (1,).
    gen = torch.Generator().manual_seed(0)
    A = torch.randn(2, 5, 3, dtype=torch.float64, generator=gen)
    B = torch.randn(2, 5, dtype=torch.float64, generator=gen)
    theirs = torch.linalg.lstsq(A, B, driver=driver)
    ours = tw.linalg.lstsq(_tw(A), _tw(B), driver=driver)
    assert tuple(ours.residuals.shape) == tuple(theirs.residuals.shape) == (2, 1)
    np.testing.assert_allclose(np.asarray(ours.residuals), theirs.residuals.numpy(), rtol=1e-10)


@pytest.mark.parametrize("driver", ["gelsd", "gelss"])
def test_lstsq_singular_values_are_not_differentiable(backend, driver):
    # Before: singular_values required grad (torch's lstsq does not differentiate them).
    gen = torch.Generator().manual_seed(1)
    A = torch.randn(5, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    B = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    theirs = torch.linalg.lstsq(A, B, driver=driver)
    ours = tw.linalg.lstsq(_tw(A, True), _tw(B), driver=driver)
    assert ours.singular_values.requires_grad is theirs.singular_values.requires_grad is False
    assert ours.solution.requires_grad and ours.residuals.requires_grad


@pytest.mark.parametrize("driver", ["gels", "gelsd"])
def test_lstsq_without_columns_residuals_as_torch(backend, driver):
    # Before: 'gels' of a (5, 0) A gave |B|^2 where torch's (LAPACK's quick return) gives 0.
    gen = torch.Generator().manual_seed(2)
    A = torch.randn(5, 0, dtype=torch.float64, generator=gen)
    B = torch.randn(5, 2, dtype=torch.float64, generator=gen)
    theirs = torch.linalg.lstsq(A, B, driver=driver)
    ours = tw.linalg.lstsq(_tw(A), _tw(B), driver=driver)
    np.testing.assert_allclose(np.asarray(ours.residuals), theirs.residuals.numpy(), rtol=1e-12)


def _ldl(n: int = 4):
    gen = torch.Generator().manual_seed(3)
    S = torch.randn(n, n, dtype=torch.float64, generator=gen)
    LD, pivots = torch.linalg.ldl_factor(S + S.mT)
    return LD, pivots, torch.randn(n, 2, dtype=torch.float64, generator=gen)


@pytest.mark.parametrize(
    "case",
    ["float_pivots", "short_pivots", "batched_pivots", "batch_mismatch", "b_batch", "b_vector"],
)
def test_ldl_solve_bad_inputs_raise_as_torch(backend, case):
    # Before: float pivots an IndexError, batched pivots broadcast (torch refuses), batch
    # mismatches NumPy's ValueError, a vector B a RuntimeError (torch: IndexError).
    LD, pivots, B = _ldl()
    args = {
        "float_pivots": (LD, pivots.double(), B),
        "short_pivots": (LD, pivots[:3], B),
        "batched_pivots": (LD, pivots.expand(2, 4), B),
        "batch_mismatch": (LD.expand(2, 4, 4), pivots.expand(3, 4), B),
        "b_batch": (LD.expand(2, 4, 4), pivots.expand(2, 4), B.expand(3, 4, 2)),
        "b_vector": (LD, pivots, B[:, 0]),
    }[case]
    _same_error(
        lambda: tw.linalg.ldl_solve(*(_tw(a) for a in args)),
        lambda: torch.linalg.ldl_solve(*args),
    )


def test_ldl_solve_still_broadcasts_b(backend):
    LD, pivots, _ = _ldl()
    B = torch.randn(3, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    theirs = torch.linalg.ldl_solve(LD, pivots, B)
    ours = tw.linalg.ldl_solve(_tw(LD), _tw(pivots), _tw(B))
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_istft_two_sided_needs_n_fft_bins(backend):
    # Before: onesided=False with n_fft // 2 + 1 bins was read as one-sided (torch raises).
    x = torch.randn(9, 5, dtype=torch.complex128, generator=torch.Generator().manual_seed(5))
    _same_error(
        lambda: tw.istft(_tw(x), 16, onesided=False),
        lambda: torch.istft(x, 16, onesided=False),
    )


def _half_cases(A: torch.Tensor) -> dict:
    pivots = torch.ones(3, dtype=torch.int32)
    return {
        "geqrf": (lambda a: torch.geqrf(a), lambda a: a.geqrf()),
        "ormqr": (lambda a: torch.ormqr(a, a[0], a), lambda a: a.ormqr(a[0], a)),
        "ldl_factor": (torch.linalg.ldl_factor, tw.linalg.ldl_factor),
        "ldl_factor_ex": (torch.linalg.ldl_factor_ex, tw.linalg.ldl_factor_ex),
        "ldl_solve": (
            lambda a: torch.linalg.ldl_solve(a, pivots, a),
            lambda a: tw.linalg.ldl_solve(a, _tw(pivots), a),
        ),
        "householder_product": (
            lambda a: torch.linalg.householder_product(a, a[0]),
            lambda a: tw.linalg.householder_product(a, a[0]),
        ),
        "qr": (torch.linalg.qr, tw.linalg.qr),
        "svd": (torch.linalg.svd, tw.linalg.svd),
        "eigvals": (torch.linalg.eigvals, tw.linalg.eigvals),
        "det": (torch.linalg.det, tw.linalg.det),
        "cholesky": (torch.linalg.cholesky, tw.linalg.cholesky),
        "cond": (torch.linalg.cond, tw.linalg.cond),
    }


@pytest.mark.parametrize("name", list(_half_cases(torch.eye(3))))
@pytest.mark.parametrize("dtype", [torch.float16, torch.int64])
def test_linalg_kernels_refuse_half_and_integers_as_torch(name, dtype):
    # Before: a RuntimeError for float16 where torch's kernels raise NotImplementedError
    # (and ldl's argument check a RuntimeError for integers, kept).
    A = torch.eye(3, dtype=dtype)
    theirs, ours = _half_cases(A)[name]
    _same_error(lambda: ours(_tw(A)), lambda: theirs(A))


def test_matrix_exp_float32_without_float64_on_the_device(monkeypatch):
    # Before: the float64 accumulation cast to a dtype the device lacks (torch:mps has no
    # float64): a TypeError. Without it the result is float32's, as before that change.
    A = torch.randn(3, 4, 4, generator=torch.Generator().manual_seed(6))
    with tw.device("numpy"):
        x = _tw(A)
        kept = frozenset(x.backend.dtypes) - {tw.float64, tw.complex128}
        monkeypatch.setattr(x.backend, "dtypes", kept)
        ours = tw.linalg.matrix_exp(x)
    assert ours.dtype is tw.float32
    theirs = torch.linalg.matrix_exp(A.double()).numpy()
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-4, atol=1e-5)


def _not_differentiable_cases(A: torch.Tensor, B: torch.Tensor) -> dict:
    S = A + A.mT
    LD, pivots = torch.linalg.ldl_factor(S.detach())
    return {
        "geqrf": (lambda a, b: torch.geqrf(a)[0], lambda a, b: geqrf(a)[0]),
        "geqrf_tau": (lambda a, b: torch.geqrf(a)[1], lambda a, b: geqrf(a)[1]),
        "ldl_factor": (
            lambda a, b: torch.linalg.ldl_factor(a + a.mT).LD,
            lambda a, b: tw.linalg.ldl_factor(a + a.mT).LD,
        ),
        "ldl_solve": (
            lambda a, b: torch.linalg.ldl_solve(LD, pivots, b),
            lambda a, b: tw.linalg.ldl_solve(_tw(LD), _tw(pivots), b),
        ),
    }


@pytest.mark.parametrize("name", ["geqrf", "geqrf_tau", "ldl_factor", "ldl_solve"])
def test_not_differentiable_outputs_require_grad_and_refuse_backward(backend, name):
    # Before: the outputs did not require grad, so backward raised "does not require grad"
    # (geqrf: a RuntimeError where torch's is NotImplementedError) or, mixed with a
    # differentiable term, silently skipped this one where torch raises.
    gen = torch.Generator().manual_seed(7)
    A = torch.randn(3, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    B = torch.randn(3, 2, dtype=torch.float64, generator=gen, requires_grad=True)
    theirs, ours = _not_differentiable_cases(A, B)[name]
    a, b = _tw(A, True), _tw(B, True)
    out = ours(a, b)
    assert out.requires_grad is theirs(A, B).requires_grad is True
    _same_error(
        lambda: (ours(a, b).sum() + a.sum() + b.sum()).backward(),
        lambda: (theirs(A, B).sum() + A.sum() + B.sum()).backward(),
    )


def _tw(t: torch.Tensor, requires_grad: bool = False) -> tw.Tensor:
    return to_tw(t, requires_grad)
