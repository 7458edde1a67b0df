"""det, slogdet, logdet (tw.linalg and the top-level aliases) against PyTorch: values,
gradients (also by finite differences and second order), and singular matrices, where
PyTorch's det gradient is 0 at first order and the cofactor matrix under create_graph."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck, gradgradcheck
from linalg_reference import compare, matrices, spd

DTYPES = ["float64", "float32"]
#: Rank 2 with an exact zero pivot in every LU (a repeated row is exactly singular only on
#: some CPUs' kernels: torch's determinant of [[1, 2, 3], [2, 4, 6], [1, 0, 1]] was -6.7e-16
#: on one Intel machine, 0 on AMD).
SINGULAR = [[1.0, 2, 3], [0, 0, 0], [1, 0, 1]]


@pytest.mark.cunumeric
def test_det_like_torch_cheap(backend: str) -> None:
    compare(lambda m, a: m.linalg.det(a), matrices((2, 3, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2,), (0,), (2, 1)])
def test_determinants_like_torch(backend: str, dtype: str, batch: tuple) -> None:
    a = matrices((*batch, 4, 4)) - 3 * np.eye(4)  # some determinants negative
    compare(lambda m, a: m.linalg.det(a), a, dtype=dtype)
    compare(lambda m, a: m.det(a), a, dtype=dtype)
    compare(lambda m, a: m.linalg.slogdet(a).logabsdet, a, dtype=dtype)
    compare(lambda m, a: m.slogdet(a)[0], a, dtype=dtype, grad=False)
    compare(lambda m, a: m.logdet(a), spd((*batch, 4, 4)), dtype=dtype)
    compare(lambda m, a: m.logdet(a), a, dtype=dtype, grad=False)  # NaN where det < 0


def test_determinant_gradients_by_finite_differences(backend: str) -> None:
    a = matrices((2, 3, 3))
    gradcheck(lambda a: tw.linalg.det(a), a)
    gradgradcheck(lambda a: tw.linalg.det(a), a)
    gradgradcheck(lambda a: tw.linalg.slogdet(a)[1], a)


def test_det_at_singular_matrices_like_torch(backend: str) -> None:
    a = np.stack([matrices((3, 3)), np.array(SINGULAR)])
    compare(lambda m, a: m.linalg.det(a), a)
    # under create_graph the singular matrix's gradient is its cofactor matrix, from the SVD
    grads, second = [], []
    weights = np.random.default_rng(3).standard_normal(a.shape)
    for m in (tw, torch):
        x = m.tensor(a, requires_grad=True)
        (g,) = m.autograd.grad(m.linalg.det(x).sum(), x, create_graph=True)
        grads.append(g.detach().numpy())
        (h,) = m.autograd.grad((g * m.tensor(weights)).sum(), x)
        second.append(h.numpy())
    np.testing.assert_allclose(grads[0], grads[1], atol=1e-10)
    np.testing.assert_allclose(second[0], second[1], atol=1e-10)
    cofactor = np.linalg.det(a[0]) * np.linalg.inv(a[0]).T
    np.testing.assert_allclose(grads[0][0], cofactor, atol=1e-10)
    assert np.abs(grads[0][1]).max() > 1  # SINGULAR has rank 2: nonzero cofactors


def test_slogdet_of_singular_matrix(backend: str) -> None:
    sign, logabs = tw.linalg.slogdet(tw.tensor(SINGULAR))
    assert sign.item() == 0 and logabs.item() == -np.inf
    with pytest.raises(RuntimeError, match="square matrices"):
        tw.linalg.det(tw.ones(2, 3, dtype=tw.float64))
    with pytest.raises(RuntimeError, match="floating point"):
        tw.linalg.det(tw.ones(3, 3, dtype=tw.int64))
