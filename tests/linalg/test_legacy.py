"""PyTorch's older spellings (torch.svd, qr, cholesky, lu, lu_solve, triangular_solve,
orgqr, pinverse, det, inverse, ...) as functions and Tensor methods, against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from linalg_reference import compare, matrices, spd

#: PyTorch warns that these spellings are deprecated
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")


def test_methods_like_torch(backend: str) -> None:
    a, s = matrices((2, 3, 3)), spd((2, 3, 3))
    compare(lambda m, a: a.det(), a)
    compare(lambda m, a: a.inverse(), a)
    compare(lambda m, s: s.logdet(), s)
    compare(lambda m, a: a.slogdet()[1], a)
    compare(lambda m, s: s.cholesky(), s)
    compare(lambda m, s: s.cholesky(upper=True), s)
    compare(lambda m, a: a.matrix_power(3), a)
    compare(lambda m, a: a.matrix_exp(), a / 4)
    compare(lambda m, a: a.pinverse(), a)
    compare(lambda m, s, a: a.cholesky_solve(s.cholesky()), s, a)
    compare(lambda m, s: s.cholesky().cholesky_inverse(), s)


@pytest.mark.parametrize("some", [True, False])
def test_qr_and_svd_old_spellings(backend: str, some: bool) -> None:
    a = matrices((2, 5, 3))
    compare(lambda m, a: m.qr(a, some=some).R, a, grad=some)
    compare(lambda m, a: a.qr(some=some).Q.abs(), a, grad=False)

    def rebuild(m, a):  # noqa: ANN001, ANN202
        u, s, v = m.svd(a, some=some)
        k = s.shape[-1]
        return (u[..., :k] * s.unsqueeze(-2)) @ v[..., :k].mT

    compare(rebuild, a)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_triangular_solve_like_torch(backend: str, upper: bool, transpose: bool) -> None:
    a, b = matrices((2, 4, 4)), matrices((2, 4, 2), 1)

    def fn(m, b, a):  # noqa: ANN001, ANN202
        return m.triangular_solve(b, a, upper=upper, transpose=transpose).solution

    compare(fn, b, a)
    x, copy = tw.tensor(b).triangular_solve(tw.tensor(a), upper=upper, transpose=transpose)
    np.testing.assert_array_equal(copy.numpy(), a)


def test_lu_orgqr_lu_solve_like_torch(backend: str) -> None:
    a, b = matrices((2, 4, 4)), matrices((2, 4, 2), 1)
    compare(lambda m, a: m.lu(a)[0], a)
    compare(lambda m, b, a: m.lu_solve(b, *m.lu(a)), b, a)
    compare(lambda m, b, a: b.lu_solve(*a.lu()), b, a)
    infos = tw.lu(tw.tensor(a), get_infos=True)[2]
    assert infos.tolist() == [0, 0]
    tau = np.random.default_rng(2).uniform(0.5, 1.5, (2, 3))
    compare(lambda m, a, tau: m.orgqr(a, tau), matrices((2, 5, 3)), tau)
    singular = a.copy()
    singular[1] = 0
    with pytest.raises(RuntimeError, match=r"Batch element 1"):
        tw.lu(tw.tensor(singular))
    assert tw.lu(tw.tensor(singular), get_infos=True)[2].tolist() == (
        torch.lu(torch.tensor(singular), get_infos=True)[2].tolist()
    )


def test_lu_unpack_like_torch(backend: str) -> None:
    a = matrices((2, 4, 3))

    def fn(m, a):  # noqa: ANN001, ANN202
        p, low, up = m.lu_unpack(*m.linalg.lu_factor(a))
        return m.cat([p.flatten(-2), low.flatten(-2), up.flatten(-2)], -1)

    compare(fn, a)
    p, low, up = tw.lu_unpack(*tw.linalg.lu_factor(tw.tensor(a)), unpack_data=False)
    assert low.numel() == up.numel() == 0 and p.shape == (2, 4, 4)
