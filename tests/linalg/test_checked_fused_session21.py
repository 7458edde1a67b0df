"""cholesky, solve, inv and lu_factor as the torch backend's whole checked functions (torch's own
check of LAPACK's info, where the core read the info on the host): the same error class and
message as torch's for a failed factorization, with and without grad, batched or not, real
or complex; and the same values as torch for a complex solve from the right."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

#: name -> f(module, a, b): a call that fails on the singular batch element.
CALLS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "cholesky": lambda m, a, b: m.linalg.cholesky(a),
    "cholesky upper": lambda m, a, b: m.linalg.cholesky(a, upper=True),
    "solve": lambda m, a, b: m.linalg.solve(a, b),
    "solve vector": lambda m, a, b: m.linalg.solve(a, b[..., 0]),
    "solve right": lambda m, a, b: m.linalg.solve(a, b.mT, left=False),
    "lu_factor": lambda m, a, b: m.linalg.lu_factor(a),
    "inv": lambda m, a, b: m.linalg.inv(a),
    "inverse": lambda m, a, b: m.inverse(a),
}


def _failing(batched: bool, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Matrices whose last one is zero (singular, not positive-definite), and right sides."""
    a = np.stack([np.eye(3) * 2, np.zeros((3, 3))]).astype(dtype)
    b = np.ones((2, 3, 2), dtype)
    return (a, b) if batched else (a[1], b[1])


def _error(fn: Callable[[], Any]) -> BaseException:
    with pytest.raises(RuntimeError) as caught:
        fn()
    return caught.value


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_failed_factorization_raises_like_torch(
    backend: str, name: str, batched: bool, grad: bool, dtype: np.dtype
) -> None:
    a, b = _failing(batched, dtype)
    fn = CALLS[name]
    theirs = _error(
        lambda: fn(torch, torch.tensor(a, requires_grad=grad), torch.tensor(b, requires_grad=grad))
    )
    with tw.device(backend):
        ours = _error(
            lambda: fn(tw, tw.tensor(a, requires_grad=grad), tw.tensor(b, requires_grad=grad))
        )
    assert str(ours) == str(theirs)
    linalg_error = isinstance(theirs, torch.linalg.LinAlgError)
    assert isinstance(ours, tw.linalg.LinAlgError) == linalg_error


@pytest.mark.parametrize("grad", [False, True])
def test_complex_solve_from_the_right_like_torch(backend: str, grad: bool) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    b = rng.standard_normal((2, 4, 3)) + 1j * rng.standard_normal((2, 4, 3))
    expected = torch.linalg.solve(torch.tensor(a), torch.tensor(b), left=False)
    with tw.device(backend):
        x = tw.linalg.solve(tw.tensor(a, requires_grad=grad), tw.tensor(b), left=False)
        np.testing.assert_allclose(np.asarray(x.detach()), expected.resolve_conj(), rtol=1e-12)
