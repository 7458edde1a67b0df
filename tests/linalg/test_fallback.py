"""A backend without a linalg kernel still runs tw.linalg: the core computes the primitive
with NumPy on the host, warns once per primitive with HostFallbackWarning, and gives the
same values and gradients (LU on NumPy always takes this path: NumPy has no LU)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
from linalg_reference import compare, matrices, spd
from tensorweaver.ops import host_fallback
from tensorweaver.ops.host_fallback import HostFallbackWarning

PRIMITIVES = [
    "linalg_cholesky_ex", "linalg_lu_factor_ex", "linalg_solve_ex", "linalg_solve_triangular",
    "linalg_qr", "linalg_eigh", "linalg_svd", "linalg_det", "linalg_slogdet",
]  # fmt: skip


@pytest.fixture
def without_kernels(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The current backend with every linalg primitive and its whole linalg functions
    hidden, its warnings not yet given."""
    native = tw.zeros(1).backend
    for name in [*PRIMITIVES, "linalg_function"]:
        monkeypatch.setattr(native, name, None, raising=False)
    monkeypatch.setattr(host_fallback, "_warned", set())


def test_fallback_warns_once_per_primitive(backend: str, without_kernels: None) -> None:
    a = tw.tensor(matrices((2, 3, 3)))
    if backend == "numpy":  # its arrays are host arrays already: no copy to warn about
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tw.linalg.svd(a)
        return
    with pytest.warns(HostFallbackWarning, match="linalg_svd") as caught:
        tw.linalg.svdvals(a)
        tw.linalg.svd(a)
    assert len([w for w in caught if "linalg_svd" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tw.linalg.svd(a)  # no second warning


def test_fallback_matches_torch(without_kernels: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HostFallbackWarning)
        a, s, b = matrices((2, 4, 4)), spd((2, 4, 4)), matrices((2, 4, 2), 1)
        compare(lambda m, s: m.linalg.cholesky(s), s)
        compare(lambda m, a, b: m.linalg.solve(a, b), a, b)
        compare(lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), a, b)
        compare(lambda m, a: m.linalg.lu_factor(a).LU, a)
        compare(lambda m, a: m.linalg.qr(a).R, a)
        compare(lambda m, s: m.linalg.eigvalsh(s), s)
        compare(lambda m, a: m.linalg.svdvals(a), a)
        compare(lambda m, a: m.linalg.det(a), a)
        compare(lambda m, a: m.linalg.slogdet(a).logabsdet, a)
        singular = a.copy()
        singular[1] = 0
        assert tw.linalg.inv_ex(tw.tensor(singular)).info.tolist() == [0, 1]
        s[0, 2, 2] = -100
        assert tw.linalg.cholesky_ex(tw.tensor(s)).info.tolist() == [3, 0]
        np.testing.assert_equal(tw.linalg.lu_factor(tw.tensor(a)).pivots.dtype, tw.int32)


def test_check_cases_pass_through_the_fallback(backend: str, without_kernels: None) -> None:
    """tw check's linalg cases (forward, backward, every layout) on the host code."""
    report = tw.check(backend, only=["linalg/cholesky", "linalg/lu", "linalg/svd"])
    assert report, [c for c in report.results if c.verdict != "ok"]
    assert len(report.results) == 15
